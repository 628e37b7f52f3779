-- Approvals: a permission that needs a second person's yes before it runs.
--
-- Lifecycle (docs/approvals.md has the full description):
--
--   pending  ──approve──► approved ──used once (single use)──► approved + used_at
--      │                     │
--      ├──deny──► denied      └──expires_at passes unused──► expired
--      └──expires_at passes undecided──► expired
--
-- Every change goes through a SECURITY DEFINER function; the API roles have
-- no INSERT, UPDATE or DELETE grant on the table:
--
--   approval_request(permission, table, key, ttl, valid_for)
--       the requester's own attempt (its own short transaction): reuses or
--       opens the pending approval, records expiry, reports the outcome.
--   approval_use(permission, table, key, single_use)
--       inside the refused-or-admitted request's transaction: admits an
--       approved, unexpired, unused approval and marks it used (single use),
--       so a request that rolls back does not spend its approval.
--   approval_decide(id, approve)
--       approvers of the caller's active tenant only, never on their own
--       request.
--
-- Approvals belong to a tenant: tenant_id records the requester's active
-- tenant (tablegate.current_tenant_id()) when the approval is opened; NULL
-- in a tenant-less project (no tenant claim). Reading, deciding and
-- spending are confined to the caller's active tenant, and an approval is
-- spent only by the same actor, permission, table, key and tenant.
-- Requesting and spending need a full member of that tenant: a user
-- removed from a tenant, or an anonymous sign-in, is refused (42501;
-- approval_use answers NULL). Callers without a tenant claim need none.
--
-- Approvers of a tenant (tablegate.is_approver_of) are recognised as the
-- setting approver_source says (tablegate.set_approver_source):
--   'memberships' (default)  a tenant membership of the caller holding
--                            approver_role() (immediate truth);
--   'claims'                 the token's memberships claim: an entry
--                            {"scope":"tenant","id":<tenant>,"roles":[…]}
--                            holding approver_role() (as fresh as the token);
--   'global_role'            the claim role approver_role() in any tenant.
-- For a tenant-less approval the approver holds the claim role
-- approver_role() (tablegate.is_approver()). The approver role is the
-- setting approver_role (no row: 'approver'), read from the verified claims
-- by tablegate.has_role (claim roles, else app_metadata.roles; never
-- user_metadata). Change it with
--   select tablegate.set_approver_role('reviewer');

-- +goose Up
create table tablegate.approvals (
  id           uuid primary key default gen_random_uuid(),
  permission   text not null check (length(permission) between 1 and 200),
  actor        uuid not null,
  target_table text not null default '' check (length(target_table) <= 200),
  target_key   text not null default '' check (length(target_key) <= 500),
  state        text not null default 'pending'
               check (state in ('pending', 'approved', 'denied', 'expired')),
  requested_at timestamptz not null default now(),
  decided_by   uuid,
  decided_at   timestamptz,
  expires_at   timestamptz not null,
  valid_for    interval not null default interval '1 hour' check (valid_for > interval '0'),
  used_at      timestamptz,
  tenant_id    uuid,
  check ((state in ('approved', 'denied')) = (decided_at is not null) or state = 'expired'),
  check (used_at is null or state = 'approved')
);
comment on table tablegate.approvals is 'tablegate approvals; change only through tablegate.approval_* functions.';
comment on column tablegate.approvals.tenant_id is 'the requester''s active tenant when the approval was opened; NULL without a tenant claim';

-- At most one pending approval per requester, permission, target and tenant.
create unique index approvals_one_pending_idx on tablegate.approvals
  (actor, permission, target_table, target_key, coalesce(tenant_id, '00000000-0000-0000-0000-000000000000'::uuid))
  where state = 'pending';
create index approvals_target_idx on tablegate.approvals (actor, permission, target_table, target_key, requested_at desc);
create index approvals_pending_idx on tablegate.approvals (requested_at) where state = 'pending';
create index approvals_tenant_idx on tablegate.approvals (tenant_id, requested_at desc);

-- approver_role returns the approver_role setting as a constant, rewritten
-- by the trigger settings_functions like tenant_claim(), so that
-- is_approver() is inlinable.
-- +goose StatementBegin
create function tablegate.approver_role() returns text
language sql stable parallel safe
as $$ select 'approver'::pg_catalog.text $$;
-- +goose StatementEnd

-- set_approver_role changes the role approvers must hold (claim roles).
-- +goose StatementBegin
create function tablegate.set_approver_role(role text) returns void
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
begin
  if role is null or length(role) not between 1 and 100 then
    raise exception 'approver role must be 1 to 100 characters' using errcode = '22023';
  end if;
  insert into tablegate.settings (key, value) values ('approver_role', role)
  on conflict (key) do update set value = excluded.value;
end
$$;
-- +goose StatementEnd

-- approver_source returns how approvers of a tenant are recognised.
-- +goose StatementBegin
create function tablegate.approver_source() returns text
language sql stable parallel safe
as $$
  select coalesce((select s.value from tablegate.settings s where s.key operator(pg_catalog.=) 'approver_source'),
                  'memberships')
$$;
-- +goose StatementEnd

-- set_approver_source chooses memberships (default), claims or global_role.
-- +goose StatementBegin
create function tablegate.set_approver_source(source text) returns void
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
begin
  if source is null or source not in ('memberships', 'claims', 'global_role') then
    raise exception 'approver source must be memberships, claims or global_role' using errcode = '22023';
  end if;
  insert into tablegate.settings (key, value) values ('approver_source', source)
  on conflict (key) do update set value = excluded.value;
end
$$;
-- +goose StatementEnd

-- is_approver is true for a signed-in, non-anonymous caller whose verified
-- claims hold the approver role.
-- +goose StatementBegin
create function tablegate.is_approver() returns boolean
language sql stable parallel safe
as $$
  select auth.uid() is not null
     and not tablegate.is_anonymous()
     and tablegate.has_role(tablegate.approver_role())
$$;
-- +goose StatementEnd

-- is_approver_of is true for a signed-in, non-anonymous caller who is an
-- approver of tenant (see approver_source); for a NULL tenant, a caller
-- holding the claim role approver_role(). PL/pgSQL, so that callers who
-- may not read memberships (anon) get false instead of a permission
-- error; policies call it once per statement as an init-plan.
-- +goose StatementBegin
create function tablegate.is_approver_of(tenant uuid) returns boolean
language plpgsql stable
set search_path = pg_catalog, pg_temp
as $$
declare
  me uuid := auth.uid();
  role text;
  source text;
begin
  if me is null or tablegate.is_anonymous() then
    return false;
  end if;
  role := tablegate.approver_role();
  source := tablegate.approver_source();
  if tenant is null or source = 'global_role' then
    return coalesce(tablegate.has_role(role), false);
  elsif source = 'claims' then
    return exists (
      select 1 from jsonb_array_elements(tablegate.claim_array('memberships')) e
      where e ->> 'scope' = 'tenant' and e ->> 'id' = tenant::text
        and jsonb_typeof(e -> 'roles') = 'array' and (e -> 'roles') ? role);
  end if;
  return exists (
    select 1 from tablegate.memberships m
    where m.user_id = me and m.scope = 'tenant' and m.scope_id = tenant::text
      and role = any (m.roles));
end
$$;
-- +goose StatementEnd

alter table tablegate.approvals enable row level security;
alter table tablegate.approvals force row level security;

-- Requesters read their own approvals, approvers every approval, of the
-- caller's active tenant.
create policy approvals_read on tablegate.approvals for select to authenticated
  using (tenant_id is not distinct from (select tablegate.current_tenant_id())
         and (actor = (select auth.uid())
              or (select tablegate.is_approver_of(tablegate.current_tenant_id()))));
-- The table's owner runs the SECURITY DEFINER functions below. Forced RLS
-- binds the owner too, and a managed Postgres owner neither is superuser
-- nor bypasses RLS: this policy lets exactly the current owner (inside the
-- functions) read and write. API roles can never become the owner.
create policy approvals_owner on tablegate.approvals for all
  using (current_user = (select pg_catalog.pg_get_userbyid(c.relowner) from pg_catalog.pg_class c
                         where c.oid = 'tablegate.approvals'::regclass))
  with check (current_user = (select pg_catalog.pg_get_userbyid(c.relowner) from pg_catalog.pg_class c
                              where c.oid = 'tablegate.approvals'::regclass));
grant select on tablegate.approvals to authenticated;
grant all on tablegate.approvals to service_role;

-- approval_state is the state of an approval as of now: a pending or
-- approved-and-unused approval past expires_at is expired.
-- +goose StatementBegin
create function tablegate.approval_state(a tablegate.approvals) returns text
language sql stable
set search_path = pg_catalog, pg_temp
as $$
  select case
    when a.state in ('pending', 'approved') and a.used_at is null and a.expires_at <= now() then 'expired'
    else a.state
  end
$$;
-- +goose StatementEnd

-- approval_request is one attempt of the caller (auth.uid()) at a gated
-- permission on a target, run in its own short transaction so that its
-- effect survives the refusal of the request. It returns the approval the
-- attempt is about and the outcome:
--   'pending'  an open approval (reused, or opened now): APPROVAL_REQUIRED
--   'approved' an approval that admits the request (the caller then
--              re-checks in the request's own transaction with approval_use)
--   'denied'   an approver said no; it holds until its expires_at
--   'expired'  the latest approval lapsed (undecided, or approved but
--              unused) and is now recorded as expired; the next attempt
--              opens a new one
-- Opening a new approval: when there is none, or the latest one was used
-- (single use), or it expired earlier, or its denial has run out.
-- +goose StatementBegin
create function tablegate.approval_request(
  permission text, target_table text, target_key text,
  ttl interval, valid_for interval
) returns table (approval_id uuid, outcome text)
language plpgsql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  me uuid := auth.uid();
  tenant uuid := tablegate.current_tenant_id();
  a tablegate.approvals;
begin
  if me is null then
    raise exception 'approvals need a signed-in user' using errcode = '42501';
  end if;
  if tablegate.is_anonymous() then
    raise exception 'approvals need a full user, not an anonymous sign-in' using errcode = '42501';
  end if;
  if tenant is not null and tablegate.member_tenant_id() is distinct from tenant then
    raise exception 'approvals need a member of the active tenant' using errcode = '42501';
  end if;
  if ttl is null or ttl <= interval '0' or valid_for is null or valid_for <= interval '0' then
    raise exception 'ttl and valid_for must be positive' using errcode = '22023';
  end if;
  target_table := coalesce(target_table, '');
  target_key := coalesce(target_key, '');
  -- Serialize attempts of one requester on one target in one tenant.
  perform pg_advisory_xact_lock(hashtextextended(
    json_build_array('tablegate.approval', me, permission, target_table, target_key, tenant)::text, 0));
  select * into a from tablegate.approvals x
  where x.actor = me and x.permission = approval_request.permission
    and x.target_table = approval_request.target_table and x.target_key = approval_request.target_key
    and x.tenant_id is not distinct from tenant
  order by x.requested_at desc, x.id desc
  limit 1;
  if found then
    if a.state in ('pending', 'approved') and a.used_at is null and a.expires_at <= now() then
      update tablegate.approvals set state = 'expired' where id = a.id;
      return query select a.id, 'expired'::text;
      return;
    elsif a.state = 'pending' then
      return query select a.id, 'pending'::text;
      return;
    elsif a.state = 'approved' and a.used_at is null then
      return query select a.id, 'approved'::text;
      return;
    elsif a.state = 'denied' and a.expires_at > now() then
      return query select a.id, 'denied'::text;
      return;
    end if;
  end if;
  insert into tablegate.approvals (permission, actor, target_table, target_key, tenant_id, expires_at, valid_for)
  values (approval_request.permission, me, approval_request.target_table, approval_request.target_key,
          tenant, now() + ttl, approval_request.valid_for)
  returning * into a;
  return query select a.id, 'pending'::text;
end
$$;
-- +goose StatementEnd

-- approval_use admits the caller's request when its latest approval for
-- the permission, target and tenant is approved, unexpired and unused;
-- with single_use it marks it used. Run it in the request's own
-- transaction: if the request rolls back, the approval stays unused.
-- Returns the approval id, or NULL when nothing admits the request.
-- +goose StatementBegin
create function tablegate.approval_use(
  permission text, target_table text, target_key text, single_use boolean
) returns uuid
language plpgsql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  me uuid := auth.uid();
  tenant uuid := tablegate.current_tenant_id();
  a tablegate.approvals;
  used uuid;
begin
  if me is null or tablegate.is_anonymous()
     or (tenant is not null and tablegate.member_tenant_id() is distinct from tenant) then
    return null;
  end if;
  select * into a from tablegate.approvals x
  where x.actor = me and x.permission = approval_use.permission
    and x.target_table = coalesce(approval_use.target_table, '')
    and x.target_key = coalesce(approval_use.target_key, '')
    and x.tenant_id is not distinct from tenant
  order by x.requested_at desc, x.id desc
  limit 1;
  if not found or a.state <> 'approved' or a.used_at is not null or a.expires_at <= now() then
    return null;
  end if;
  if not single_use then
    return a.id;
  end if;
  update tablegate.approvals set used_at = now()
  where id = a.id and state = 'approved' and used_at is null and expires_at > now()
  returning id into used;
  return used;
end
$$;
-- +goose StatementEnd

-- approval_decide approves or denies a pending approval. Approving starts
-- the validity window (expires_at = now() + valid_for); denying keeps
-- expires_at, so the denial holds until then.
-- approval_decide: the caller must be an approver of their active tenant
-- (42501 not_approver), the approval must exist in that tenant (P0002
-- otherwise: another tenant's approval is not found), must not be the
-- caller's own (42501 own_request) and must be pending (55000).
-- +goose StatementBegin
create function tablegate.approval_decide(approval_id uuid, approve boolean)
returns setof tablegate.approvals
language plpgsql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  me uuid := auth.uid();
  tenant uuid := tablegate.current_tenant_id();
  a tablegate.approvals;
begin
  if approve is null then
    raise exception 'approve must be true or false' using errcode = '22023';
  end if;
  if not tablegate.is_approver_of(tenant) then
    raise exception 'only approvers of the tenant decide approvals' using errcode = '42501', hint = 'not_approver';
  end if;
  select * into a from tablegate.approvals x
  where x.id = approval_id and x.tenant_id is not distinct from tenant
  for update;
  if not found then
    raise exception 'approval not found' using errcode = 'P0002';
  end if;
  if a.actor = me then
    raise exception 'approvers cannot decide their own request' using errcode = '42501', hint = 'own_request';
  end if;
  if a.state <> 'pending' or a.expires_at <= now() then
    raise exception 'approval is not pending' using errcode = '55000';
  end if;
  if approve then
    update tablegate.approvals
    set state = 'approved', decided_by = me, decided_at = now(), expires_at = now() + a.valid_for
    where id = a.id returning * into a;
  else
    update tablegate.approvals
    set state = 'denied', decided_by = me, decided_at = now()
    where id = a.id returning * into a;
  end if;
  return next a;
end
$$;
-- +goose StatementEnd

revoke all on function tablegate.set_approver_role(text), tablegate.set_approver_source(text)
  from public, anon, authenticated, service_role;
revoke all on function tablegate.approval_request(text, text, text, interval, interval),
  tablegate.approval_use(text, text, text, boolean), tablegate.approval_decide(uuid, boolean)
  from public, anon, authenticated, service_role;
grant execute on function tablegate.approval_request(text, text, text, interval, interval),
  tablegate.approval_use(text, text, text, boolean), tablegate.approval_decide(uuid, boolean)
  to authenticated;
grant execute on function tablegate.approver_role(), tablegate.approver_source(), tablegate.is_approver(),
  tablegate.is_approver_of(uuid), tablegate.approval_state(tablegate.approvals)
  to anon, authenticated, service_role;

-- +goose Down
-- First the settings: deleting approver_role rewrites approver_role()
-- (trigger settings_functions), which is dropped below.
delete from tablegate.settings where key in ('approver_role', 'approver_source');
drop function tablegate.approval_decide(uuid, boolean);
drop function tablegate.approval_use(text, text, text, boolean);
drop function tablegate.approval_request(text, text, text, interval, interval);
drop function tablegate.approval_state(tablegate.approvals);
drop table tablegate.approvals;
drop function tablegate.is_approver_of(uuid);
drop function tablegate.is_approver();
drop function tablegate.set_approver_source(text);
drop function tablegate.approver_source();
drop function tablegate.set_approver_role(text);
drop function tablegate.approver_role();
