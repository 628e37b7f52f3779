-- auth.uid(), auth.role(), auth.jwt() as Supabase defines them, reading
-- request.jwt.claims. Created only where missing: on a Supabase database the
-- platform's own functions stay untouched. Functions created here carry the
-- comment 'tablegate' so that Down drops exactly those and nothing else.

-- +goose Up
create schema if not exists auth;
grant usage on schema auth to anon, authenticated, service_role;

-- +goose StatementBegin
do $$
begin
  if to_regprocedure('auth.uid()') is null then
    create function auth.uid() returns uuid language sql stable as $f$
      select coalesce(
        nullif(current_setting('request.jwt.claim.sub', true), ''),
        (nullif(current_setting('request.jwt.claims', true), '')::jsonb ->> 'sub')
      )::uuid $f$;
    comment on function auth.uid() is 'tablegate';
  end if;
  if to_regprocedure('auth.role()') is null then
    create function auth.role() returns text language sql stable as $f$
      select coalesce(
        nullif(current_setting('request.jwt.claim.role', true), ''),
        (nullif(current_setting('request.jwt.claims', true), '')::jsonb ->> 'role')
      )::text $f$;
    comment on function auth.role() is 'tablegate';
  end if;
  if to_regprocedure('auth.jwt()') is null then
    create function auth.jwt() returns jsonb language sql stable as $f$
      select coalesce(
        nullif(current_setting('request.jwt.claim', true), ''),
        nullif(current_setting('request.jwt.claims', true), '')
      )::jsonb $f$;
    comment on function auth.jwt() is 'tablegate';
  end if;
end
$$;
-- +goose StatementEnd
grant execute on function auth.uid(), auth.role(), auth.jwt() to anon, authenticated, service_role;

-- +goose Down
-- +goose StatementBegin
do $$
declare
  f text;
begin
  foreach f in array array['auth.uid()', 'auth.role()', 'auth.jwt()'] loop
    if to_regprocedure(f) is not null
       and obj_description(to_regprocedure(f), 'pg_proc') = 'tablegate' then
      execute 'drop function ' || f;
    end if;
  end loop;
  -- Drop the schema only when it is empty and not Supabase's.
  if not exists (select 1 from pg_proc where pronamespace = 'auth'::regnamespace)
     and not exists (select 1 from pg_class where relnamespace = 'auth'::regnamespace) then
    drop schema auth;
  end if;
end
$$;
-- +goose StatementEnd
