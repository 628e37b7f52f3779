-- Roles the API runs as, exactly as a Supabase database has them.
-- Roles are cluster-global: create only where missing (a Supabase database
-- already has them), under an advisory lock so that parallel migrations of
-- several databases of one cluster do not race. Down leaves them in place:
-- other databases of the cluster may use them.

-- +goose Up
-- +goose StatementBegin
do $$
begin
  perform pg_advisory_xact_lock(hashtext('tablegate.roles'));
  if not exists (select 1 from pg_roles where rolname = 'anon') then
    create role anon nologin noinherit;
  end if;
  if not exists (select 1 from pg_roles where rolname = 'authenticated') then
    create role authenticated nologin noinherit;
  end if;
  if not exists (select 1 from pg_roles where rolname = 'service_role') then
    create role service_role nologin noinherit bypassrls;
  end if;
  -- The connecting role must be able to SET ROLE to each API role.
  if not pg_has_role(current_user, 'anon', 'member') then
    execute format('grant anon to %I', current_user);
  end if;
  if not pg_has_role(current_user, 'authenticated', 'member') then
    execute format('grant authenticated to %I', current_user);
  end if;
  if not pg_has_role(current_user, 'service_role', 'member') then
    execute format('grant service_role to %I', current_user);
  end if;
end
$$;
-- +goose StatementEnd
grant usage on schema public to anon, authenticated, service_role;

-- +goose Down
select 1;
