-- Tenants and memberships, the membership checks policies use, and the
-- installer of tenant row policies.
--
-- A membership grants a user roles within a scope ('tenant', 'project', ...)
-- and an id within that scope. The checks accept either source of truth:
-- the memberships claim of the verified token (fast, as fresh as the
-- token; tablegate.access_token_hook writes it) or the memberships table
-- (immediate truth). A token's claim admits a membership the table no
-- longer has until the token expires.
--
-- The checks, cheapest first (docs/tenant.md lists the measured costs):
--
--   tablegate.member_tenant       views: id is the caller's active tenant
--   tablegate.full_member_tenant  when the caller is a member of it (and,
--                                 for full_member_tenant, not an anonymous
--                                 sign-in); no row otherwise. Policies read
--                                 them in a sub-select:
--                                   tenant_id = (select id from tablegate.member_tenant)
--   member_tenant_id(role), full_member_tenant_id(role)
--                                 the same as functions, with a role;
--   member_tenant_ids()           every tenant the caller is a member of;
--   is_member(scope, id, role)    any scope.
--
-- Why the membership check is a view: a view is planned once with the
-- statement (an init-plan) and runs as one index probe with no function
-- call, where a SECURITY DEFINER PL/pgSQL function costs its call, SET
-- search_path and its expressions set up again in every transaction
-- (measured: 35-45 µs of Postgres CPU per statement beyond an owner
-- policy). For that the views read tablegate.tenant_members, the tenant
-- memberships as (user_id::text, scope_id) pairs kept equal to
-- tablegate.memberships by triggers in the same transaction:
--   * the views compare the subject lower-cased as text: a canonical uuid
--     in any case matches its user and anything else matches no one,
--     where a cast to uuid would raise an error for a subject that is not
--     one;
--   * tenant_members belongs to the migrating role, like the views, and
--     its row security is enabled but not forced, with no policy and no
--     grant: the API roles cannot read it, and the views (which read it
--     with their owner's rights) read it without any policy. memberships
--     keeps its forced row security; a view reading it would pay its
--     policies' init-plans. A policy on memberships may read the views
--     (they do not read memberships);
--   * security_barrier: a caller's condition on a view is not evaluated
--     before the view's own.

-- +goose Up
create table tablegate.tenants (
  id         uuid primary key default gen_random_uuid(),
  name       text not null check (length(name) between 1 and 200),
  created_at timestamptz not null default now()
);

create table tablegate.memberships (
  user_id    uuid not null,
  scope      text not null default 'tenant' check (length(scope) between 1 and 100),
  scope_id   text not null check (length(scope_id) between 1 and 200),
  roles      text[] not null default '{}',
  created_at timestamptz not null default now(),
  primary key (user_id, scope, scope_id)
);
create index memberships_scope_idx on tablegate.memberships (scope, scope_id);

create table tablegate.tenant_members (
  user_key text not null,  -- memberships.user_id::text
  tenant   text not null,  -- memberships.scope_id of scope 'tenant'
  primary key (user_key, tenant)
);
comment on table tablegate.tenant_members is
  'The tenant memberships as (user_id::text, scope_id), kept by triggers on tablegate.memberships; read by tablegate.member_tenant. Internal: no grants.';
alter table tablegate.tenant_members enable row level security;
revoke all on table tablegate.tenant_members from public, anon, authenticated, service_role;

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

-- is_member is true when the caller holds a membership of scope/id (with
-- role, when given), from the verified claims or the memberships table.
-- Security definer: it reads the table whatever the caller's grants, and
-- only ever for the claims' sub. PL/pgSQL: its statements are planned once
-- per session, not once per calling statement.
-- is_member keeps searching the claim element by element: its scope and id
-- are any text, and an id the claim holds as a JSON number ("id": 7) is a
-- membership of '7', which containment would not find.
-- +goose StatementBegin
create function tablegate.is_member(scope text, id text, role text default null) returns boolean
language plpgsql stable security definer parallel safe
set search_path = pg_catalog, pg_temp
as $$
declare
  c jsonb := tablegate.claims();
  s text;
begin
  if scope is null or id is null then
    return false;
  end if;
  if (c ? 'memberships' or (c -> 'app_metadata') ? 'memberships') then
    if exists (
         select 1 from jsonb_array_elements(tablegate.claim_array_of(c, 'memberships')) e
         where e ->> 'scope' = is_member.scope and e ->> 'id' = is_member.id
           and (is_member.role is null
                or (jsonb_typeof(e -> 'roles') = 'array' and (e -> 'roles') ? is_member.role))) then
      return true;
    end if;
  end if;
  s := c ->> 'sub';
  if not coalesce(tablegate.is_uuid_text(s), false) then
    return false;
  end if;
  perform from tablegate.memberships m
  where m.user_id = s::uuid and m.scope = is_member.scope and m.scope_id = is_member.id
    and (is_member.role is null or is_member.role = any (m.roles));
  return found;
end
$$;
-- +goose StatementEnd

-- member_tenant_id_for(role, exclude_anonymous) answers the caller's
-- active tenant when the caller is a member of it (with role, when given;
-- NULL for an anonymous sign-in with exclude_anonymous), else NULL. The
-- memberships claim is searched only when the token carries one, by jsonb
-- containment; the table is probed otherwise. member_tenant_id(role) and
-- full_member_tenant_id(role) are SQL wrappers Postgres inlines into the
-- policy: one definer call per statement.
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
create function tablegate.member_tenant_id(role text default null) returns uuid
language sql stable parallel safe
as $$
  select tablegate.member_tenant_id_for(member_tenant_id.role, false)
$$;
-- +goose StatementEnd
comment on function tablegate.member_tenant_id(text) is
  'The caller''s active tenant when the caller holds a membership of it (with role, when given), else NULL. '
  'Policies: tenant_id = (select tablegate.member_tenant_id()).';
-- +goose StatementBegin
create function tablegate.full_member_tenant_id(role text default null) returns uuid
language sql stable parallel safe
as $$
  select tablegate.member_tenant_id_for(full_member_tenant_id.role, true)
$$;
-- +goose StatementEnd
comment on function tablegate.full_member_tenant_id(text) is
  'member_tenant_id() for full users: NULL for an anonymous sign-in. Call it in a sub-select, once per statement.';

-- member_tenant_ids lists every tenant the caller is a member of, once per
-- statement (only canonical lower-case uuids, as is_member compares with
-- id::text); tenants_member_read compares each row's id with it in a
-- sub-select, which the primary key index serves.
-- +goose StatementBegin
create function tablegate.member_tenant_ids() returns uuid[]
language plpgsql stable security definer parallel safe
set search_path = pg_catalog, pg_temp
as $$
declare
  c jsonb := tablegate.claims();
  s text := c ->> 'sub';
  ids text[] := '{}';
begin
  if c ? 'memberships' or (c -> 'app_metadata') ? 'memberships' then
    select coalesce(array_agg(e ->> 'id'), '{}') into ids
    from jsonb_array_elements(tablegate.claim_array_of(c, 'memberships')) e
    where e ->> 'scope' = 'tenant';
  end if;
  if coalesce(tablegate.is_uuid_text(s), false) then
    ids := ids || coalesce((select array_agg(m.scope_id) from tablegate.memberships m
                            where m.user_id = s::uuid and m.scope = 'tenant'), '{}');
  end if;
  return coalesce((select array_agg(distinct i::uuid) from unnest(ids) i
                   where coalesce(tablegate.is_uuid_text(i), false) and i = lower(i)), '{}');
end
$$;
-- +goose StatementEnd
comment on function tablegate.member_tenant_ids() is
  'The tenants the caller is a member of (memberships claim, then memberships table). Call it in a sub-select, once per statement.';

-- The memberships claim (tablegate.access_token_hook) is read by a function,
-- called only when the table has no membership: written out in the views,
-- its expressions would be set up by every statement (about 12 function nodes,
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

alter table tablegate.tenants enable row level security;
alter table tablegate.tenants force row level security;
alter table tablegate.memberships enable row level security;
alter table tablegate.memberships force row level security;

-- Members read their tenants; memberships are read by their user.
-- Writes: service_role only (it bypasses RLS).
create policy tenants_member_read on tablegate.tenants for select to authenticated
  using (id = any ((select tablegate.member_tenant_ids())::uuid[]));
create policy memberships_own_read on tablegate.memberships for select to authenticated
  using (user_id = (select auth.uid()));
-- The SECURITY DEFINER functions that read memberships run as the table's
-- owner. Forced RLS binds the owner too, and a managed Postgres owner
-- neither is superuser nor bypasses RLS: this policy lets exactly the
-- current owner read. API roles can never become the owner.
create policy memberships_owner_read on tablegate.memberships for select
  using (current_user = (select pg_catalog.pg_get_userbyid(c.relowner) from pg_catalog.pg_class c
                         where c.oid = 'tablegate.memberships'::pg_catalog.regclass));

grant select on tablegate.tenants, tablegate.memberships to authenticated;
grant all on tablegate.tenants, tablegate.memberships to service_role;
grant select on tablegate.member_tenant, tablegate.full_member_tenant to anon, authenticated, service_role;

-- Tenant row policies. One call confines a table to the caller's active
-- tenant:
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
-- With require_membership the caller must also be a member of the tenant
-- (tablegate.member_tenant / full_member_tenant), so that removing a
-- membership row takes effect before the token expires. Every helper is
-- read in a sub-select, evaluated once per statement (an init-plan), not
-- once per row; an index on (tenant_id, ...) serves the comparison. The
-- policies are for role authenticated: callers without a session (anon)
-- get nothing, service_role bypasses row-level security. Grants stay the
-- application's business.
-- +goose StatementBegin
create function tablegate.disable_tenant_policies(tbl regclass) returns void
language plpgsql volatile
set search_path = pg_catalog, pg_temp
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
-- +goose StatementBegin
create function tablegate.enable_tenant_policies(
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
comment on function tablegate.enable_tenant_policies(regclass, name, boolean, boolean) is
  'Confines a table to the caller''s active tenant; writes by full users only.';

-- tenant_policy_options reads back the options a table was enabled with
-- (from the dependencies of its tablegate_tenant_select policy).
-- +goose StatementBegin
create function tablegate.tenant_policy_options(tbl regclass,
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

-- policy_has_anon_check is true when a policy's expressions exclude
-- anonymous sign-ins: they reference tablegate.is_anonymous(),
-- is_full_user(), full_member_tenant_id() or tablegate.full_member_tenant,
-- or name the is_anonymous claim (the Supabase documentation's
-- (auth.jwt() ->> 'is_anonymous')::boolean is false).
-- +goose StatementBegin
create function tablegate.policy_has_anon_check(policy oid) returns boolean
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

-- write_policies_without_anon_check lists, for the tables of the given
-- schemas, each write command that role authenticated (the role anonymous
-- sign-ins run as) holds the privilege for although no policy excludes
-- anonymous sign-ins:
--
--   reason 'rls_disabled'         row-level security is off: every
--                                 authenticated caller, guests included,
--                                 may write;
--   reason 'policy_without_check' no restrictive policy for the command
--                                 carries the check, and the permissive
--                                 policies listed in "policies" lack it.
--
-- A command with no permissive policy for authenticated is not listed (RLS
-- refuses it to everyone). The check is by reference: a policy counts as
-- checking when it calls tablegate.is_anonymous()/is_full_user() or names
-- the 'is_anonymous' claim.
-- +goose StatementBegin
create function tablegate.write_policies_without_anon_check(schemas text[] default array['public'])
returns table (table_schema text, table_name text, command text, reason text, policies text[])
language sql stable
set search_path = pg_catalog, pg_temp
as $$
  with t as (
    select c.oid, n.nspname::text as sch, c.relname::text as rel, c.relrowsecurity as rls
    from pg_catalog.pg_class c
    join pg_catalog.pg_namespace n on n.oid = c.relnamespace
    where c.relkind in ('r', 'p') and n.nspname = any (schemas)
  ), cmds(cmd, polcmd) as (
    values ('INSERT', 'a'::"char"), ('UPDATE', 'w'::"char"), ('DELETE', 'd'::"char")
  ), tc as (
    select t.*, cmds.cmd, cmds.polcmd from t cross join cmds
    where case cmds.cmd
            when 'DELETE' then pg_catalog.has_table_privilege('authenticated', t.oid, 'DELETE')
            -- a column-level grant is enough to insert or update
            else pg_catalog.has_any_column_privilege('authenticated', t.oid, cmds.cmd)
          end
  ), pol as (
    select tc.oid, tc.cmd, p.polname::text as name, p.polpermissive as permissive,
           tablegate.policy_has_anon_check(p.oid) as checked
    from tc join pg_catalog.pg_policy p
      on p.polrelid = tc.oid and p.polcmd in (tc.polcmd, '*')
    where 0::oid = any (p.polroles)
       or exists (select 1 from unnest(p.polroles) r(oid)
                  where pg_catalog.pg_has_role('authenticated', r.oid, 'MEMBER'))
  )
  select tc.sch, tc.rel, tc.cmd, 'rls_disabled', array[]::text[]
  from tc where not tc.rls
  union all
  select tc.sch, tc.rel, tc.cmd, 'policy_without_check',
         array(select pol.name from pol
               where pol.oid = tc.oid and pol.cmd = tc.cmd and pol.permissive and not pol.checked
               order by pol.name)
  from tc
  where tc.rls
    and exists (select 1 from pol where pol.oid = tc.oid and pol.cmd = tc.cmd and pol.permissive and not pol.checked)
    and not exists (select 1 from pol where pol.oid = tc.oid and pol.cmd = tc.cmd and not pol.permissive and pol.checked)
  order by 1, 2, 3
$$;
-- +goose StatementEnd
comment on function tablegate.write_policies_without_anon_check(text[]) is
  'Doctor check: write commands open to anonymous sign-ins (table_schema, table_name, command, reason, policies).';

grant execute on function tablegate.is_member(text, text, text), tablegate.member_tenant_id_for(text, boolean),
  tablegate.member_tenant_id(text), tablegate.full_member_tenant_id(text), tablegate.member_tenant_ids(),
  tablegate.claims_name_member(jsonb, text)
  to anon, authenticated, service_role;
revoke all on function tablegate.sync_tenant_members(), tablegate.resync_tenant_members(),
  tablegate.enable_tenant_policies(regclass, name, boolean, boolean), tablegate.disable_tenant_policies(regclass),
  tablegate.tenant_policy_options(regclass)
  from public, anon, authenticated, service_role;
revoke all on function tablegate.policy_has_anon_check(oid), tablegate.write_policies_without_anon_check(text[])
  from public, anon, authenticated;
grant execute on function tablegate.policy_has_anon_check(oid), tablegate.write_policies_without_anon_check(text[])
  to service_role;

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
drop function tablegate.write_policies_without_anon_check(text[]);
drop function tablegate.policy_has_anon_check(oid);
drop function tablegate.tenant_policy_options(regclass);
drop function tablegate.enable_tenant_policies(regclass, name, boolean, boolean);
drop function tablegate.disable_tenant_policies(regclass);
drop view tablegate.full_member_tenant;
drop view tablegate.member_tenant;
drop function tablegate.claims_name_member(jsonb, text);
drop table tablegate.memberships;
drop table tablegate.tenant_members;
drop table tablegate.tenants;
drop function tablegate.member_tenant_ids();
drop function tablegate.full_member_tenant_id(text);
drop function tablegate.member_tenant_id(text);
drop function tablegate.member_tenant_id_for(text, boolean);
drop function tablegate.is_member(text, text, text);
drop function tablegate.resync_tenant_members();
drop function tablegate.sync_tenant_members();
