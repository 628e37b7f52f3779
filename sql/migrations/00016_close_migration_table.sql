-- Close goose's version table (tablegate_migrations, db.MigrationTable) to
-- the API roles.
--
-- goose creates it in the first schema of the search path, normally
-- public. A Supabase database grants every new table of schema public to
-- anon, authenticated and service_role by default privileges, and serves
-- public through its REST API: anyone holding the publishable key could
-- insert a high version (so that later migrations, security fixes included,
-- are skipped) or delete rows (so that the next migrate fails or re-runs
-- them). Here every privilege of the API roles on the table and its id
-- sequence is revoked and row-level security is enabled with no policy
-- (the owner, who migrates, is not bound by it). A migration table renamed
-- with goose.WithTableName is the application's to protect.

-- +goose Up
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
-- Down leaves the table closed: opening it to the API roles again is
-- never wanted.
select 1;
