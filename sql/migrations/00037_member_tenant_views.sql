-- The caller's member tenant as a view: a membership check that costs a
-- policy about what an owner check costs.
--
-- "tenant_id = (select tablegate.member_tenant_id())" calls a SECURITY
-- DEFINER PL/pgSQL function once per statement. Measured on the realistic
-- fixture (bench/BenchmarkPolicyDB, and pgbench sending the caller's
-- settings and a GET by id per transaction), that call costs about 35-45 µs
-- of Postgres CPU per statement beyond an owner policy ("owner_id = (select
-- auth.uid())"): the function call itself, SET search_path, PL/pgSQL
-- expressions set up again in every transaction, the index probe through
-- SPI, and the uuid checks. The owner policy reads 1/0.62-0.69 of it.
--
-- The same check written as a view is planned once with the statement
-- (an init-plan) and runs as one index probe with no function call:
--
--   tablegate.member_tenant       id: the caller's active tenant when the
--                                 caller is a member of it (a row of
--                                 tablegate.memberships, else the token's
--                                 memberships claim); no row otherwise
--   tablegate.full_member_tenant  the same for full users: no row for an
--                                 anonymous sign-in
--
-- Policies read them in a sub-select: "tenant_id = (select id from
-- tablegate.member_tenant)". They answer what member_tenant_id() and
-- full_member_tenant_id() answer (equivalence_test.go compares them for
-- every kind of caller).
--
-- How the probe stays one index lookup, with no function and no policy:
--   * tablegate.tenant_members holds the pairs (user_key, tenant) of the
--     tenant memberships: user_id as text, scope_id. Triggers on
--     memberships keep it equal to them in the same transaction. The views
--     compare the subject lower-cased as text: a canonical uuid in any case
--     matches its user and anything else matches no one, where a cast to
--     uuid would raise an error for a subject that is not one;
--   * tenant_members belongs to the migrating role, like the views, and
--     its row security is enabled but not forced, with no policy and no
--     grant: the API roles cannot read it, and the views (which read it
--     with their owner's rights) read it without any policy. memberships
--     keeps its forced row security; a view reading it would pay its
--     policies' init-plans. A policy on memberships may read the views
--     (they do not read memberships);
--   * security_barrier: a caller's condition on a view is not evaluated
--     before the view's own.
--
-- member_tenant_id(role) and full_member_tenant_id(role) stay for checks of
-- a role; enable_tenant_policies(…, require_membership => true) installs
-- the views, and tables enabled before are re-installed.

-- +goose Up
-- Writers of memberships wait until the triggers below exist: a change
-- committed between the copy and the triggers would be lost.
lock table tablegate.memberships in share row exclusive mode;
create table tablegate.tenant_members (
  user_key text not null,  -- memberships.user_id::text
  tenant   text not null,  -- memberships.scope_id of scope 'tenant'
  primary key (user_key, tenant)
);
comment on table tablegate.tenant_members is
  'The tenant memberships as (user_id::text, scope_id), kept by triggers on tablegate.memberships; read by tablegate.member_tenant. Internal: no grants.';
alter table tablegate.tenant_members enable row level security;
revoke all on table tablegate.tenant_members from public, anon, authenticated, service_role;
insert into tablegate.tenant_members (user_key, tenant)
select user_id::text, scope_id from tablegate.memberships where scope = 'tenant';

-- +goose StatementBegin
create function tablegate.sync_tenant_members() returns trigger
language plpgsql security definer
set search_path = pg_catalog, pg_temp
as $$
begin
  if tg_relid <> 'tablegate.memberships'::pg_catalog.regclass then
    raise exception 'tablegate.sync_tenant_members() is a trigger of tablegate.memberships only';
  end if;
  if tg_op = 'TRUNCATE' then
    delete from tablegate.tenant_members;
    return null;
  end if;
  if tg_op in ('UPDATE', 'DELETE') and old.scope = 'tenant' then
    delete from tablegate.tenant_members where user_key = old.user_id::text and tenant = old.scope_id;
  end if;
  if tg_op in ('INSERT', 'UPDATE') and new.scope = 'tenant' then
    insert into tablegate.tenant_members (user_key, tenant) values (new.user_id::text, new.scope_id)
    on conflict do nothing;
  end if;
  return null;
end
$$;
-- +goose StatementEnd
comment on function tablegate.sync_tenant_members() is
  'Trigger: keeps tablegate.tenant_members equal to the tenant rows of tablegate.memberships.';
revoke all on function tablegate.sync_tenant_members() from public, anon, authenticated, service_role;
create trigger tenant_members_sync after insert or update or delete on tablegate.memberships
  for each row execute function tablegate.sync_tenant_members();
create trigger tenant_members_sync_truncate after truncate on tablegate.memberships
  for each statement execute function tablegate.sync_tenant_members();

-- Writes that fire no trigger (session_replication_role = replica, as seed
-- files and data-only restores set it; disabled triggers) leave
-- tenant_members behind: the tables' owner rebuilds it with this.
-- +goose StatementBegin
create function tablegate.resync_tenant_members() returns bigint
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
  n bigint;
begin
  lock table tablegate.memberships in share row exclusive mode;
  delete from tablegate.tenant_members;
  insert into tablegate.tenant_members (user_key, tenant)
  select user_id::text, scope_id from tablegate.memberships where scope = 'tenant';
  get diagnostics n = row_count;
  return n;
end
$$;
-- +goose StatementEnd
comment on function tablegate.resync_tenant_members() is
  'Rebuilds tablegate.tenant_members from tablegate.memberships after writes that fired no trigger; returns the rows written. For the tables'' owner.';
revoke all on function tablegate.resync_tenant_members() from public, anon, authenticated, service_role;

-- The memberships claim (tablegate.access_token_hook) is read by a function,
-- called only when the table has no membership: written out in the views,
-- its expressions were set up by every statement (about 12 function nodes,
-- each with its privilege check, whether the claim is there or not). A
-- token's claim still admits a membership the table no longer has, until
-- the token expires, as member_tenant_id() does.
-- +goose StatementBegin
create function tablegate.claims_name_member(claims jsonb, tenant text) returns boolean
language plpgsql stable parallel safe
set search_path = pg_catalog, pg_temp
as $$
begin
  return (claims ? 'memberships' or (claims -> 'app_metadata') ? 'memberships')
     and tablegate.claim_array_of(claims, 'memberships') @> jsonb_build_array(jsonb_build_object('scope', 'tenant', 'id', tenant));
end
$$;
-- +goose StatementEnd
comment on function tablegate.claims_name_member(jsonb, text) is
  'True when the memberships claim of claims (top level or app_metadata) lists the tenant (lower-case text). Used by tablegate.member_tenant.';
grant execute on function tablegate.claims_name_member(jsonb, text) to anon, authenticated, service_role;

-- The claims are parsed once, the tenant computed once (the offset 0
-- layers keep Postgres from copying their expressions into each use).
create view tablegate.member_tenant with (security_barrier) as
select x.t::uuid as id
from (select s.c, pg_catalog.lower(tablegate.tenant_text_of(s.c)) as t
      from (select tablegate.claims() as c offset 0) s offset 0) x
where tablegate.is_uuid_text(x.t)
  and (exists (select from tablegate.tenant_members m
               where m.user_key = pg_catalog.lower(x.c ->> 'sub') and m.tenant = x.t
               offset 0)
       or tablegate.claims_name_member(x.c, x.t));
comment on view tablegate.member_tenant is
  'The caller''s active tenant (id) when the caller is a member of it; no row otherwise. Read it in a sub-select: tenant_id = (select id from tablegate.member_tenant).';

create view tablegate.full_member_tenant with (security_barrier) as
select x.t::uuid as id
from (select s.c, pg_catalog.lower(tablegate.tenant_text_of(s.c)) as t
      from (select tablegate.claims() as c offset 0) s offset 0) x
where tablegate.is_uuid_text(x.t)
  and not coalesce(x.c -> 'is_anonymous' = 'true'::jsonb, false)
  and (exists (select from tablegate.tenant_members m
               where m.user_key = pg_catalog.lower(x.c ->> 'sub') and m.tenant = x.t
               offset 0)
       or tablegate.claims_name_member(x.c, x.t));
comment on view tablegate.full_member_tenant is
  'tablegate.member_tenant for full users: no row for an anonymous sign-in. Read it in a sub-select: tenant_id = (select id from tablegate.full_member_tenant).';

grant select on tablegate.member_tenant, tablegate.full_member_tenant to anon, authenticated, service_role;


-- enable_tenant_policies(…, require_membership => true) installs the views;
-- tenant_policy_options and policy_has_anon_check (the doctor's count of
-- write policies that exclude anonymous sign-ins) recognise them, and
-- tenant_policy_options reads the tenant column from the table itself (a
-- policy reading a view depends on the view's column too).
-- +goose StatementBegin
create or replace function tablegate.enable_tenant_policies(
  tbl regclass,
  tenant_column name default 'tenant_id',
  anon_read boolean default false,
  require_membership boolean default false
) returns void
language plpgsql volatile
set search_path = pg_catalog, pg_temp
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
    -- One per-statement check (an init-plan): full_member_tenant has no
    -- row for an anonymous sign-in.
    own := format('%I = (select id%s from tablegate.member_tenant)', tenant_column, cast_to);
    own_full := format('%I = (select id%s from tablegate.full_member_tenant)', tenant_column, cast_to);
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
set search_path = pg_catalog, pg_temp
as $$
  select (select a.attname from pg_catalog.pg_depend d
          join pg_catalog.pg_attribute a on a.attrelid = d.refobjid and a.attnum = d.refobjsubid
          where d.classid = 'pg_catalog.pg_policy'::regclass and d.objid = p.oid
            and d.refclassid = 'pg_catalog.pg_class'::regclass and d.refobjid = tbl and d.refobjsubid > 0
          limit 1),
         not exists (select 1 from pg_catalog.pg_depend d
                     where d.classid = 'pg_catalog.pg_policy'::regclass and d.objid = p.oid
                       and d.refclassid = 'pg_catalog.pg_proc'::regclass
                       and d.refobjid in ('tablegate.is_anonymous()'::regprocedure,
                                          'tablegate.full_member_tenant_id(text)'::regprocedure)
                        or d.classid = 'pg_catalog.pg_policy'::regclass and d.objid = p.oid
                       and d.refclassid = 'pg_catalog.pg_class'::regclass
                       and d.refobjid = 'tablegate.full_member_tenant'::regclass),
         exists (select 1 from pg_catalog.pg_depend d
                 where d.classid = 'pg_catalog.pg_policy'::regclass and d.objid = p.oid
                   and d.refclassid = 'pg_catalog.pg_proc'::regclass
                   and d.refobjid in ('tablegate.is_member(text, text, text)'::regprocedure,
                                      'tablegate.member_tenant_id(text)'::regprocedure,
                                      'tablegate.full_member_tenant_id(text)'::regprocedure)
                    or d.classid = 'pg_catalog.pg_policy'::regclass and d.objid = p.oid
                   and d.refclassid = 'pg_catalog.pg_class'::regclass
                   and d.refobjid in ('tablegate.member_tenant'::regclass, 'tablegate.full_member_tenant'::regclass))
  from pg_catalog.pg_policy p
  where p.polrelid = tbl and p.polname = 'tablegate_tenant_select'
$$;
-- +goose StatementEnd

-- +goose StatementBegin
create or replace function tablegate.policy_has_anon_check(policy oid) returns boolean
language sql stable
set search_path = pg_catalog, pg_temp
as $$
  select exists (
    select 1 from pg_catalog.pg_depend d
    where d.classid = 'pg_catalog.pg_policy'::regclass and d.objid = policy
      and d.refclassid = 'pg_catalog.pg_proc'::regclass
      and d.refobjid in ('tablegate.is_anonymous()'::regprocedure, 'tablegate.is_full_user()'::regprocedure,
                         'tablegate.full_member_tenant_id(text)'::regprocedure)
  ) or exists (
    select 1 from pg_catalog.pg_depend d
    where d.classid = 'pg_catalog.pg_policy'::regclass and d.objid = policy
      and d.refclassid = 'pg_catalog.pg_class'::regclass
      and d.refobjid = 'tablegate.full_member_tenant'::regclass
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
-- The definitions of 00029, the tables enabled before re-installed with
-- them (read with this migration's tenant_policy_options, which knows both
-- shapes), then the views go.
-- +goose StatementBegin
create or replace function tablegate.enable_tenant_policies(
  tbl regclass,
  tenant_column name default 'tenant_id',
  anon_read boolean default false,
  require_membership boolean default false
) returns void
language plpgsql volatile
set search_path = pg_catalog, pg_temp
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
set search_path = pg_catalog, pg_temp
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

-- +goose StatementBegin
create or replace function tablegate.policy_has_anon_check(policy oid) returns boolean
language sql stable
set search_path = pg_catalog, pg_temp
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

drop view tablegate.full_member_tenant;
drop view tablegate.member_tenant;
drop function tablegate.claims_name_member(jsonb, text);
drop trigger tenant_members_sync_truncate on tablegate.memberships;
drop trigger tenant_members_sync on tablegate.memberships;
drop function tablegate.resync_tenant_members();
drop function tablegate.sync_tenant_members();
drop table tablegate.tenant_members;
