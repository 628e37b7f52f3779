-- The policies tablegate installs evaluate each helper once per statement.
--
-- A helper call that does not refer to the row, written as a sub-select
-- "(select tablegate.f())", becomes an init-plan: Postgres evaluates it once
-- per statement and compares every row with the result. Written bare in a
-- filter, it runs once per row. docs/tenant.md lists the patterns and their
-- measured costs.
--
--   enable_tenant_policies(…, require_membership => true)
--       installed "tenant_id = (select tablegate.current_tenant_id()) and
--       tablegate.is_member('tenant', tenant_id::text)": a membership lookup
--       per row. It now installs "tenant_id = (select
--       tablegate.member_tenant_id())": the same rows (a row passes when its
--       tenant is the caller's active tenant and the caller is a member of
--       it), one lookup per statement, and an index on (tenant_id, …) serves
--       it. Tables enabled before this migration are re-installed here with
--       the options they were enabled with.
--   enable_realtime_policies()
--       called tablegate.tenant_topic_allowed(topic) per message row; the
--       policies now compare the topic's segments with a per-statement
--       tenant: split_part(topic, ':', 1) = 'tenant' and
--       split_part(topic, ':', 2) = (select tablegate.current_tenant_id()::text).
--       Re-installed where realtime.messages exists.
--
-- Storage and approvals policies already used the per-statement form.

-- +goose Up
-- +goose StatementBegin
create or replace function tablegate.enable_tenant_policies(
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
  tenant text := case when require_membership then 'tablegate.member_tenant_id()' else 'tablegate.current_tenant_id()' end;
  full_user constant text := 'not (select tablegate.is_anonymous())';
begin
  select a.atttypid::regtype into typ from pg_catalog.pg_attribute a
  where a.attrelid = tbl and a.attname = tenant_column and a.attnum > 0 and not a.attisdropped;
  if typ is null then
    raise exception 'table % has no column %', tbl, quote_ident(tenant_column) using errcode = '42703';
  end if;
  if typ = 'uuid'::regtype then
    own := format('%I = (select %s)', tenant_column, tenant);
  elsif typ in ('text'::regtype, 'character varying'::regtype) then
    own := format('%I = (select %s::text)', tenant_column, tenant);
  else
    raise exception 'tenant column %.% must be uuid or text, is %', tbl, quote_ident(tenant_column), typ
      using errcode = '42804';
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

-- +goose StatementBegin
create or replace function tablegate.enable_realtime_policies() returns boolean
language plpgsql volatile
set search_path = ''
as $$
declare
  topic_ok constant text :=
    'extension in (''broadcast'', ''presence'') and not (select tablegate.is_anonymous()) '
    'and pg_catalog.split_part(topic, '':'', 1) = ''tenant'' '
    'and pg_catalog.split_part(topic, '':'', 2) = (select tablegate.current_tenant_id()::text)';
begin
  if to_regclass('realtime.messages') is null then
    raise notice 'realtime.messages does not exist (Supabase Realtime is not installed); run select tablegate.enable_realtime_policies() once it is';
    return false;
  end if;
  drop policy if exists tablegate_tenant_topics_receive on realtime.messages;
  drop policy if exists tablegate_tenant_topics_send on realtime.messages;
  execute format('create policy tablegate_tenant_topics_receive on realtime.messages for select to authenticated using (%s)', topic_ok);
  execute format('create policy tablegate_tenant_topics_send on realtime.messages for insert to authenticated with check (%s)', topic_ok);
  return true;
end
$$;
-- +goose StatementEnd

-- tenant_policy_options reads back how a table's tenant policies were
-- installed: the tenant column (the one column the select policy refers
-- to), whether anonymous sign-ins read (no is_anonymous check in the select
-- policy) and whether a membership is required (the select policy calls
-- is_member or member_tenant_id).
-- +goose StatementBegin
create function tablegate.tenant_policy_options(tbl regclass,
  out tenant_column name, out anon_read boolean, out require_membership boolean)
language sql stable
set search_path = ''
as $$
  select (select a.attname from pg_catalog.pg_depend d
          join pg_catalog.pg_attribute a on a.attrelid = d.refobjid and a.attnum = d.refobjsubid
          where d.classid = 'pg_catalog.pg_policy'::regclass and d.objid = p.oid
            and d.refclassid = 'pg_catalog.pg_class'::regclass and d.refobjsubid > 0
          limit 1),
         not exists (select 1 from pg_catalog.pg_depend d
                     where d.classid = 'pg_catalog.pg_policy'::regclass and d.objid = p.oid
                       and d.refclassid = 'pg_catalog.pg_proc'::regclass
                       and d.refobjid = 'tablegate.is_anonymous()'::regprocedure),
         exists (select 1 from pg_catalog.pg_depend d
                 where d.classid = 'pg_catalog.pg_policy'::regclass and d.objid = p.oid
                   and d.refclassid = 'pg_catalog.pg_proc'::regclass
                   and d.refobjid in ('tablegate.is_member(text, text, text)'::regprocedure,
                                      'tablegate.member_tenant_id(text)'::regprocedure))
  from pg_catalog.pg_policy p
  where p.polrelid = tbl and p.polname = 'tablegate_tenant_select'
$$;
-- +goose StatementEnd
revoke all on function tablegate.tenant_policy_options(regclass) from public, anon, authenticated, service_role;

-- Re-install the membership tenant policies of tables enabled before.
-- +goose StatementBegin
do $$
declare
  r record;
begin
  for r in select p.polrelid::regclass as tbl, o.*
           from pg_catalog.pg_policy p, tablegate.tenant_policy_options(p.polrelid) o
           where p.polname = 'tablegate_tenant_select' and o.require_membership and o.tenant_column is not null loop
    perform tablegate.enable_tenant_policies(r.tbl, r.tenant_column, r.anon_read, true);
  end loop;
  if to_regclass('realtime.messages') is not null
     and exists (select 1 from pg_catalog.pg_policy where polrelid = to_regclass('realtime.messages')
                 and polname = 'tablegate_tenant_topics_receive') then
    perform tablegate.enable_realtime_policies();
  end if;
end
$$;
-- +goose StatementEnd

-- +goose Down
-- The definitions of 00012 and 00014, restored, and the policies with them.
-- +goose StatementBegin
create or replace function tablegate.enable_tenant_policies(
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

-- +goose StatementBegin
create or replace function tablegate.enable_realtime_policies() returns boolean
language plpgsql volatile
set search_path = ''
as $$
begin
  if to_regclass('realtime.messages') is null then
    raise notice 'realtime.messages does not exist (Supabase Realtime is not installed); run select tablegate.enable_realtime_policies() once it is';
    return false;
  end if;
  drop policy if exists tablegate_tenant_topics_receive on realtime.messages;
  drop policy if exists tablegate_tenant_topics_send on realtime.messages;
  create policy tablegate_tenant_topics_receive on realtime.messages for select to authenticated
    using (extension in ('broadcast', 'presence')
           and not (select tablegate.is_anonymous())
           and tablegate.tenant_topic_allowed(topic));
  create policy tablegate_tenant_topics_send on realtime.messages for insert to authenticated
    with check (extension in ('broadcast', 'presence')
                and not (select tablegate.is_anonymous())
                and tablegate.tenant_topic_allowed(topic));
  return true;
end
$$;
-- +goose StatementEnd

-- +goose StatementBegin
do $$
declare
  r record;
begin
  for r in select p.polrelid::regclass as tbl, o.*
           from pg_catalog.pg_policy p, tablegate.tenant_policy_options(p.polrelid) o
           where p.polname = 'tablegate_tenant_select' and o.require_membership and o.tenant_column is not null loop
    perform tablegate.enable_tenant_policies(r.tbl, r.tenant_column, r.anon_read, true);
  end loop;
  if to_regclass('realtime.messages') is not null
     and exists (select 1 from pg_catalog.pg_policy where polrelid = to_regclass('realtime.messages')
                 and polname = 'tablegate_tenant_topics_receive') then
    perform tablegate.enable_realtime_policies();
  end if;
end
$$;
-- +goose StatementEnd
drop function tablegate.tenant_policy_options(regclass);
