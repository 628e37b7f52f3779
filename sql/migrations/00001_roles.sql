-- Roles the API runs as, exactly as a Supabase database has them, and
-- goose's version table closed to them.
--
-- Roles are cluster-global: they are created only where missing (a
-- Supabase database already has them), under an advisory lock so that
-- parallel migrations of several databases of one cluster do not race.
-- Down leaves them in place: other databases of the cluster may use them.
--
-- goose creates its version table (tablegate_migrations, db.MigrationTable)
-- in the first schema of the search path, normally public. A Supabase
-- database grants every new table of schema public to anon, authenticated
-- and service_role by default privileges, and serves public through its
-- REST API: anyone holding the publishable key could insert a high version
-- (so that later migrations, security fixes included, are skipped) or
-- delete rows (so that the next migrate fails or re-runs them). Every
-- privilege of the API roles on the table and its id sequence is revoked
-- and row-level security is enabled with no policy (the owner, who
-- migrates, is not bound by it). A migration table renamed with
-- goose.WithTableName is the application's to protect.

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

-- +goose StatementBegin
do $$
declare
  t regclass := to_regclass('tablegate_migrations');
  s text;
begin
  if t is null then
    return;
  end if;
  execute format('revoke all on table %s from public, anon, authenticated, service_role', t);
  execute format('alter table %s enable row level security', t);
  for s in select pg_catalog.pg_get_serial_sequence(t::text, a.attname)
           from pg_catalog.pg_attribute a
           where a.attrelid = t and a.attnum > 0 and not a.attisdropped loop
    if s is not null then
      execute format('revoke all on sequence %s from public, anon, authenticated, service_role', s);
    end if;
  end loop;
end
$$;
-- +goose StatementEnd

-- +goose Down
-- The roles stay (see above), and so does the closed migration table:
-- opening it to the API roles again is never wanted.
select 1;
