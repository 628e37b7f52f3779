-- Every tablegate function that sets a search path runs with
-- search_path = pg_catalog, pg_temp, not only the SECURITY DEFINER ones.
--
-- 00027 pinned the path of SECURITY DEFINER functions, but a function a
-- definer function calls runs with the definer's owner as current user too,
-- and a path set on the callee replaces the caller's for its duration.
-- tablegate.is_approver_of, called by approval_decide, still ran with
-- search_path = '': Postgres then searches the session's temporary schema
-- first for types, so a role that can run SQL (authenticated or anon on a
-- database they log in to) could create a domain pg_temp.uuid or
-- pg_temp.text whose check called its own function, call approval_decide,
-- and have that check run with the owner's rights (reading every tenant's
-- rows; as an approver of any tenant, writing them). The same holds for any
-- function a future definer might call, so every function of the schema
-- that sets a path gets the pinned one. The bodies are unchanged.
--
-- definer_test.go checks every function and the attack.

-- +goose Up
-- +goose StatementBegin
do $$
declare
  f regprocedure;
begin
  for f in select p.oid::regprocedure from pg_catalog.pg_proc p
           where p.pronamespace = 'tablegate'::regnamespace and not p.prosecdef
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
           where p.pronamespace = 'tablegate'::regnamespace and not p.prosecdef
             and p.proconfig @> array['search_path=pg_catalog, pg_temp'] loop
    execute format('alter function %s set search_path = %L', f, '');
  end loop;
end
$$;
-- +goose StatementEnd
