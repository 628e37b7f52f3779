-- SECURITY DEFINER functions run with search_path = pg_catalog, pg_temp.
--
-- They ran with search_path = ''. With an empty path Postgres still
-- searches the session's temporary schema, first, for tables and types
-- (never for functions or operators). A role that can run SQL, as
-- authenticated or anon can on a database they log in to, could create a
-- domain pg_temp.jsonb whose check calls its own function: a definer
-- function whose body names jsonb then ran that check with its owner's
-- rights, and left its compiled form pointing at the caller's type for the
-- next caller of the connection. Naming pg_temp last, as the PostgreSQL
-- manual advises for SECURITY DEFINER functions, makes it searched after
-- pg_catalog, so the built-in types always win. The bodies are unchanged.
-- Callers that reach the database only through tablegate, PostgREST or
-- supabase-js run no SQL of their own and were not exposed.
--
-- definer_test.go checks every SECURITY DEFINER function and the attack.

-- +goose Up
-- +goose StatementBegin
do $$
declare
  f regprocedure;
begin
  for f in select p.oid::regprocedure from pg_catalog.pg_proc p
           where p.pronamespace = 'tablegate'::regnamespace and p.prosecdef
             and p.proconfig @> array['search_path=""'] loop
    execute format('alter function %s set search_path = pg_catalog, pg_temp', f);
  end loop;
end
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
do $$
declare
  f regprocedure;
begin
  for f in select p.oid::regprocedure from pg_catalog.pg_proc p
           where p.pronamespace = 'tablegate'::regnamespace and p.prosecdef
             and p.proconfig @> array['search_path=pg_catalog, pg_temp'] loop
    execute format('alter function %s set search_path = %L', f, '');
  end loop;
end
$$;
-- +goose StatementEnd
