-- One per-statement check for "a member of the caller's tenant and not an
-- anonymous sign-in".
--
-- The policies of enable_tenant_policies(…, require_membership => true)
-- read "tenant_id = (select tablegate.member_tenant_id()) and not (select
-- tablegate.is_anonymous())": two init-plans, and the claims parsed twice
-- per statement. Measured on the realistic fixture (bench/BenchmarkPolicyDB,
-- module vs demo), that second parse made the module's GET cost ≈ 4 µs of
-- Postgres CPU more than the demo's and read 0.64 of the owner policy
-- against the demo's 0.71.
--
--   * tablegate.member_tenant_id_for(role, exclude_anonymous) is the
--     membership check of 00026 (SECURITY DEFINER, search_path pinned);
--     with exclude_anonymous (or NULL) it also answers NULL for an
--     anonymous sign-in (is_anonymous true in the claims), from the claims
--     it parsed already.
--   * tablegate.member_tenant_id(role) and the new
--     tablegate.full_member_tenant_id(role) are SQL functions Postgres
--     inlines into the policy: member_tenant_id_for(role, false) and
--     member_tenant_id_for(role, true). A policy calling them costs what it
--     cost before, one definer call per statement.
--   * enable_tenant_policies(…, require_membership => true) installs
--     "tenant = (select tablegate.full_member_tenant_id())" where it
--     installed the pair (writes, and reads unless anon_read); tables
--     enabled before are re-installed with their options.
--
-- Every answer stays the same: equivalence_test.go compares the helpers
-- and the installed policies with version 16 for every kind of caller.

-- +goose Up
-- +goose StatementBegin
create function tablegate.member_tenant_id_for(role text, exclude_anonymous boolean) returns uuid
language plpgsql stable security definer parallel safe
set search_path = pg_catalog, pg_temp
as $$
declare
  c jsonb := tablegate.claims();
  t text := tablegate.tenant_text_of(c);
  s text;
begin
  if not coalesce(tablegate.is_uuid_text(t), false)
     or (coalesce(exclude_anonymous, true) and c -> 'is_anonymous' = 'true'::jsonb) then
    return null;
  end if;
  t := lower(t);
  if (c ? 'memberships' or (c -> 'app_metadata') ? 'memberships')
     and tablegate.claim_array_of(c, 'memberships') @> jsonb_build_array(
           jsonb_build_object('scope', 'tenant', 'id', t)
           || case when member_tenant_id_for.role is null then '{}'::jsonb
                   else jsonb_build_object('roles', jsonb_build_array(member_tenant_id_for.role)) end) then
    return t::uuid;
  end if;
  s := c ->> 'sub';
  if not coalesce(tablegate.is_uuid_text(s), false) then
    return null;
  end if;
  perform from tablegate.memberships m
  where m.user_id = s::uuid and m.scope = 'tenant' and m.scope_id = t
    and (member_tenant_id_for.role is null or member_tenant_id_for.role = any (m.roles));
  if found then
    return t::uuid;
  end if;
  return null;
end
$$;
-- +goose StatementEnd
comment on function tablegate.member_tenant_id_for(text, boolean) is
  'The caller''s active tenant when the caller is a member of it (with role, when given; not an anonymous sign-in, with exclude_anonymous), else NULL. Call it as member_tenant_id() or full_member_tenant_id().';

-- +goose StatementBegin
create or replace function tablegate.member_tenant_id(role text default null) returns uuid
language sql stable parallel safe
as $$
  select tablegate.member_tenant_id_for(member_tenant_id.role, false)
$$;
-- +goose StatementEnd

-- +goose StatementBegin
create function tablegate.full_member_tenant_id(role text default null) returns uuid
language sql stable parallel safe
as $$
  select tablegate.member_tenant_id_for(full_member_tenant_id.role, true)
$$;
-- +goose StatementEnd
comment on function tablegate.full_member_tenant_id(text) is
  'member_tenant_id() for full users: NULL for an anonymous sign-in. Call it in a sub-select, once per statement.';
grant execute on function tablegate.member_tenant_id_for(text, boolean), tablegate.full_member_tenant_id(text)
  to anon, authenticated, service_role;

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
  own_full text;       -- own, for full users only (not anonymous sign-ins)
  cast_to text := '';
begin
  select a.atttypid::regtype into typ from pg_catalog.pg_attribute a
  where a.attrelid = tbl and a.attname = tenant_column and a.attnum > 0 and not a.attisdropped;
  if typ is null then
    raise exception 'table % has no column %', tbl, quote_ident(tenant_column) using errcode = '42703';
  end if;
  if typ in ('text'::regtype, 'character varying'::regtype) then
    cast_to := '::text';
  elsif typ <> 'uuid'::regtype then
    raise exception 'tenant column %.% must be uuid or text, is %', tbl, quote_ident(tenant_column), typ
      using errcode = '42804';
  end if;
  if require_membership then
    -- One per-statement check: full_member_tenant_id() answers NULL for
    -- an anonymous sign-in.
    own := format('%I = (select tablegate.member_tenant_id()%s)', tenant_column, cast_to);
    own_full := format('%I = (select tablegate.full_member_tenant_id()%s)', tenant_column, cast_to);
  else
    own := format('%I = (select tablegate.current_tenant_id()%s)', tenant_column, cast_to);
    own_full := own || ' and not (select tablegate.is_anonymous())';
  end if;
  perform tablegate.disable_tenant_policies(tbl);
  execute format('alter table %s enable row level security', tbl);
  execute format('create policy tablegate_tenant_select on %s for select to authenticated using (%s)',
    tbl, case when anon_read then own else own_full end);
  execute format('create policy tablegate_tenant_insert on %s for insert to authenticated with check (%s)', tbl, own_full);
  execute format('create policy tablegate_tenant_update on %s for update to authenticated using (%s) with check (%s)',
    tbl, own_full, own_full);
  execute format('create policy tablegate_tenant_delete on %s for delete to authenticated using (%s)', tbl, own_full);
end
$$;
-- +goose StatementEnd

-- +goose StatementBegin
create or replace function tablegate.tenant_policy_options(tbl regclass,
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
                       and d.refobjid in ('tablegate.is_anonymous()'::regprocedure,
                                          'tablegate.full_member_tenant_id(text)'::regprocedure)),
         exists (select 1 from pg_catalog.pg_depend d
                 where d.classid = 'pg_catalog.pg_policy'::regclass and d.objid = p.oid
                   and d.refclassid = 'pg_catalog.pg_proc'::regclass
                   and d.refobjid in ('tablegate.is_member(text, text, text)'::regprocedure,
                                      'tablegate.member_tenant_id(text)'::regprocedure,
                                      'tablegate.full_member_tenant_id(text)'::regprocedure))
  from pg_catalog.pg_policy p
  where p.polrelid = tbl and p.polname = 'tablegate_tenant_select'
$$;
-- +goose StatementEnd

-- A policy calling full_member_tenant_id() excludes anonymous sign-ins:
-- the doctor's check (write_policies_without_anon_check) counts it.
-- +goose StatementBegin
create or replace function tablegate.policy_has_anon_check(policy oid) returns boolean
language sql stable
set search_path = ''
as $$
  select exists (
    select 1 from pg_catalog.pg_depend d
    where d.classid = 'pg_catalog.pg_policy'::regclass and d.objid = policy
      and d.refclassid = 'pg_catalog.pg_proc'::regclass
      and d.refobjid in ('tablegate.is_anonymous()'::regprocedure, 'tablegate.is_full_user()'::regprocedure,
                         'tablegate.full_member_tenant_id(text)'::regprocedure)
  ) or exists (
    select 1 from pg_catalog.pg_policy p
    where p.oid = policy
      and (coalesce(pg_catalog.pg_get_expr(p.polqual, p.polrelid), '') ~ '''is_anonymous'''
        or coalesce(pg_catalog.pg_get_expr(p.polwithcheck, p.polrelid), '') ~ '''is_anonymous''')
  )
$$;
-- +goose StatementEnd

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
end
$$;
-- +goose StatementEnd

-- +goose Down
-- The definitions of 00018 (enable_tenant_policies) and the policies with
-- them, then those of 00026 (member_tenant_id, with the search_path of
-- 00027). The options are read with this migration's tenant_policy_options,
-- which knows both shapes.
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
do $$
declare
  r record;
begin
  for r in select p.polrelid::regclass as tbl, o.*
           from pg_catalog.pg_policy p, tablegate.tenant_policy_options(p.polrelid) o
           where p.polname = 'tablegate_tenant_select' and o.require_membership and o.tenant_column is not null loop
    perform tablegate.enable_tenant_policies(r.tbl, r.tenant_column, r.anon_read, true);
  end loop;
end
$$;
-- +goose StatementEnd

-- +goose StatementBegin
create or replace function tablegate.tenant_policy_options(tbl regclass,
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

-- +goose StatementBegin
create or replace function tablegate.member_tenant_id(role text default null) returns uuid
language plpgsql stable security definer parallel safe
set search_path = pg_catalog, pg_temp
as $$
declare
  c jsonb := tablegate.claims();
  t text := tablegate.tenant_text_of(c);
  s text;
begin
  if not coalesce(tablegate.is_uuid_text(t), false) then
    return null;
  end if;
  t := lower(t);
  if (c ? 'memberships' or (c -> 'app_metadata') ? 'memberships')
     and tablegate.claim_array_of(c, 'memberships') @> jsonb_build_array(
           jsonb_build_object('scope', 'tenant', 'id', t)
           || case when member_tenant_id.role is null then '{}'::jsonb
                   else jsonb_build_object('roles', jsonb_build_array(member_tenant_id.role)) end) then
    return t::uuid;
  end if;
  s := c ->> 'sub';
  if not coalesce(tablegate.is_uuid_text(s), false) then
    return null;
  end if;
  perform from tablegate.memberships m
  where m.user_id = s::uuid and m.scope = 'tenant' and m.scope_id = t
    and (member_tenant_id.role is null or member_tenant_id.role = any (m.roles));
  if found then
    return t::uuid;
  end if;
  return null;
end
$$;
-- +goose StatementEnd

-- +goose StatementBegin
create or replace function tablegate.policy_has_anon_check(policy oid) returns boolean
language sql stable
set search_path = ''
as $$
  select exists (
    select 1 from pg_catalog.pg_depend d
    where d.classid = 'pg_catalog.pg_policy'::regclass and d.objid = policy
      and d.refclassid = 'pg_catalog.pg_proc'::regclass
      and d.refobjid in ('tablegate.is_anonymous()'::regprocedure, 'tablegate.is_full_user()'::regprocedure)
  ) or exists (
    select 1 from pg_catalog.pg_policy p
    where p.oid = policy
      and (coalesce(pg_catalog.pg_get_expr(p.polqual, p.polrelid), '') ~ '''is_anonymous'''
        or coalesce(pg_catalog.pg_get_expr(p.polwithcheck, p.polrelid), '') ~ '''is_anonymous''')
  )
$$;
-- +goose StatementEnd

drop function tablegate.full_member_tenant_id(text);
drop function tablegate.member_tenant_id_for(text, boolean);
