-- Tenant row policies. One call confines a table to the caller's active
-- tenant (tablegate.current_tenant_id(), which reads the one configurable
-- tenant claim):
--
--   select tablegate.enable_tenant_policies('todos');
--
-- installs on the table (row-level security enabled):
--
--   tablegate_tenant_select  read rows of the caller's tenant; anonymous
--                            sign-ins only when anon_read is true;
--   tablegate_tenant_insert  insert rows of the caller's tenant, full
--   tablegate_tenant_update  users only (never anonymous sign-ins), and
--   tablegate_tenant_delete  never move a row to another tenant.
--
-- With require_membership the caller must also hold a membership of the
-- tenant (tablegate.is_member('tenant', id), claims or memberships table),
-- so that removing a membership row takes effect before the token expires.
-- The policies are for role authenticated: callers without a session (anon)
-- get nothing, service_role bypasses row-level security. Grants stay the
-- application's business (grant select, insert, update, delete to
-- authenticated).

-- +goose Up
-- +goose StatementBegin
create function tablegate.enable_tenant_policies(
  tbl regclass,
  tenant_column name default 'tenant_id',
  anon_read boolean default false,
  require_membership boolean default false
) returns void
language plpgsql volatile
set search_path = ''
as $$
declare
  own text;
  typ regtype;
  full_user constant text := 'not (select tablegate.is_anonymous())';
begin
  select a.atttypid::regtype into typ from pg_catalog.pg_attribute a
  where a.attrelid = tbl and a.attname = tenant_column and a.attnum > 0 and not a.attisdropped;
  if typ is null then
    raise exception 'table % has no column %', tbl, quote_ident(tenant_column) using errcode = '42703';
  end if;
  if typ = 'uuid'::regtype then
    own := format('%I = (select tablegate.current_tenant_id())', tenant_column);
  elsif typ in ('text'::regtype, 'character varying'::regtype) then
    own := format('%I = (select tablegate.current_tenant_id()::text)', tenant_column);
  else
    raise exception 'tenant column %.% must be uuid or text, is %', tbl, quote_ident(tenant_column), typ
      using errcode = '42804';
  end if;
  if require_membership then
    own := own || format(' and tablegate.is_member(''tenant'', %I::text)', tenant_column);
  end if;
  perform tablegate.disable_tenant_policies(tbl);
  execute format('alter table %s enable row level security', tbl);
  execute format('create policy tablegate_tenant_select on %s for select to authenticated using (%s%s)',
    tbl, own, case when anon_read then '' else ' and ' || full_user end);
  execute format('create policy tablegate_tenant_insert on %s for insert to authenticated with check (%s and %s)',
    tbl, own, full_user);
  execute format('create policy tablegate_tenant_update on %s for update to authenticated using (%s and %s) with check (%s and %s)',
    tbl, own, full_user, own, full_user);
  execute format('create policy tablegate_tenant_delete on %s for delete to authenticated using (%s and %s)',
    tbl, own, full_user);
end
$$;
-- +goose StatementEnd
comment on function tablegate.enable_tenant_policies(regclass, name, boolean, boolean) is
  'Confines a table to the caller''s active tenant; writes by full users only.';

-- +goose StatementBegin
create function tablegate.disable_tenant_policies(tbl regclass) returns void
language plpgsql volatile
set search_path = ''
as $$
declare
  cmd text;
begin
  foreach cmd in array array['select', 'insert', 'update', 'delete'] loop
    execute format('drop policy if exists %I on %s', 'tablegate_tenant_' || cmd, tbl);
  end loop;
end
$$;
-- +goose StatementEnd
comment on function tablegate.disable_tenant_policies(regclass) is
  'Removes the policies added by tablegate.enable_tenant_policies (row-level security stays enabled).';

revoke all on function tablegate.enable_tenant_policies(regclass, name, boolean, boolean),
  tablegate.disable_tenant_policies(regclass) from public, anon, authenticated, service_role;

-- +goose Down
-- +goose StatementBegin
do $$
declare
  r record;
begin
  for r in select p.polname, p.polrelid::regclass as tbl from pg_policy p
           where p.polname in ('tablegate_tenant_select', 'tablegate_tenant_insert',
                               'tablegate_tenant_update', 'tablegate_tenant_delete')
  loop
    execute format('drop policy %I on %s', r.polname, r.tbl);
  end loop;
end
$$;
-- +goose StatementEnd
drop function tablegate.enable_tenant_policies(regclass, name, boolean, boolean);
drop function tablegate.disable_tenant_policies(regclass);
