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
--       approvers only (tablegate.is_approver()), never on their own request.
--
-- The approver role is the setting approver_role (no row: 'approver'),
-- read from the verified claims by tablegate.has_role (claim roles, else
-- app_metadata.roles; never user_metadata). Change it with
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
  check ((state in ('approved', 'denied')) = (decided_at is not null) or state = 'expired'),
  check (used_at is null or state = 'approved')
);
comment on table tablegate.approvals is 'tablegate approvals; change only through tablegate.approval_* functions.';
-- At most one pending approval per requester, permission and target.
create unique index approvals_one_pending_idx on tablegate.approvals (actor, permission, target_table, target_key)
  where state = 'pending';
create index approvals_target_idx on tablegate.approvals (actor, permission, target_table, target_key, requested_at desc);
create index approvals_pending_idx on tablegate.approvals (requested_at) where state = 'pending';

-- approver_role returns the configured approver role.
create function tablegate.approver_role() returns text
language sql stable
set search_path = ''
as $$
  select coalesce((select value from tablegate.settings where key = 'approver_role'), 'approver')
$$;

-- set_approver_role changes the role approvers must hold (claim roles).
-- +goose StatementBegin
create function tablegate.set_approver_role(role text) returns void
language plpgsql volatile
set search_path = ''
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
revoke all on function tablegate.set_approver_role(text) from public;

-- is_approver is true for a signed-in, non-anonymous caller whose verified
-- claims hold the approver role.
create function tablegate.is_approver() returns boolean
language sql stable
set search_path = ''
as $$
  select auth.uid() is not null
     and not tablegate.is_anonymous()
     and tablegate.has_role(tablegate.approver_role())
$$;

alter table tablegate.approvals enable row level security;
alter table tablegate.approvals force row level security;
-- Requesters read their own approvals; approvers read every approval.
create policy approvals_read on tablegate.approvals for select to authenticated
  using (actor = (select auth.uid()) or (select tablegate.is_approver()));
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
create function tablegate.approval_state(a tablegate.approvals) returns text
language sql stable
set search_path = ''
as $$
  select case
    when a.state in ('pending', 'approved') and a.used_at is null and a.expires_at <= now() then 'expired'
    else a.state
  end
$$;

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
set search_path = ''
as $$
declare
  me uuid := auth.uid();
  a tablegate.approvals;
begin
  if me is null then
    raise exception 'approvals need a signed-in user' using errcode = '42501';
  end if;
  if ttl is null or ttl <= interval '0' or valid_for is null or valid_for <= interval '0' then
    raise exception 'ttl and valid_for must be positive' using errcode = '22023';
  end if;
  target_table := coalesce(target_table, '');
  target_key := coalesce(target_key, '');
  -- Serialize attempts of one requester on one target.
  perform pg_advisory_xact_lock(hashtextextended(
    json_build_array('tablegate.approval', me, permission, target_table, target_key)::text, 0));
  select * into a from tablegate.approvals x
  where x.actor = me and x.permission = approval_request.permission
    and x.target_table = approval_request.target_table and x.target_key = approval_request.target_key
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
    -- used, expired earlier, or a denial that ran out: open a new one.
  end if;
  insert into tablegate.approvals (permission, actor, target_table, target_key, expires_at, valid_for)
  values (approval_request.permission, me, approval_request.target_table, approval_request.target_key,
          now() + ttl, approval_request.valid_for)
  returning * into a;
  return query select a.id, 'pending'::text;
end
$$;
-- +goose StatementEnd

-- approval_use admits the caller's request when its latest approval for
-- the permission and target is approved, unexpired and unused; with
-- single_use it marks it used. Run it in the request's own transaction: if
-- the request rolls back, the approval stays unused. Returns the approval
-- id, or NULL when nothing admits the request.
-- +goose StatementBegin
create function tablegate.approval_use(
  permission text, target_table text, target_key text, single_use boolean
) returns uuid
language plpgsql volatile security definer
set search_path = ''
as $$
declare
  me uuid := auth.uid();
  a tablegate.approvals;
  used uuid;
begin
  if me is null then
    return null;
  end if;
  -- No row lock here: a refused request must not hold a lock that its own
  -- approval_request (another transaction) would wait for.
  select * into a from tablegate.approvals x
  where x.actor = me and x.permission = approval_use.permission
    and x.target_table = coalesce(approval_use.target_table, '')
    and x.target_key = coalesce(approval_use.target_key, '')
  order by x.requested_at desc, x.id desc
  limit 1;
  if not found or a.state <> 'approved' or a.used_at is not null or a.expires_at <= now() then
    return null;
  end if;
  if not single_use then
    return a.id;
  end if;
  -- Concurrent uses: the second waits for the first and then finds used_at
  -- set (or, if the first rolled back, takes the approval itself).
  update tablegate.approvals set used_at = now()
  where id = a.id and state = 'approved' and used_at is null and expires_at > now()
  returning id into used;
  return used;
end
$$;
-- +goose StatementEnd

-- approval_decide approves or denies a pending approval. The caller must
-- hold the approver role (tablegate.is_approver()) and must not be the
-- requester. Approving starts the validity window (expires_at = now() +
-- valid_for); denying keeps expires_at, so the denial holds until then.
-- Errors: 42501 not an approver (hint not_approver) or own request (hint
-- own_request), P0002 no such approval
-- (or not visible), 55000 not pending (decided or expired).
-- +goose StatementBegin
create function tablegate.approval_decide(approval_id uuid, approve boolean)
returns setof tablegate.approvals
language plpgsql volatile security definer
set search_path = ''
as $$
declare
  me uuid := auth.uid();
  a tablegate.approvals;
begin
  if approve is null then
    raise exception 'approve must be true or false' using errcode = '22023';
  end if;
  if not tablegate.is_approver() then
    raise exception 'only approvers decide approvals' using errcode = '42501', hint = 'not_approver';
  end if;
  select * into a from tablegate.approvals where id = approval_id for update;
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

revoke all on function tablegate.approval_request(text, text, text, interval, interval) from public;
revoke all on function tablegate.approval_use(text, text, text, boolean) from public;
revoke all on function tablegate.approval_decide(uuid, boolean) from public;
grant execute on function tablegate.approval_request(text, text, text, interval, interval) to authenticated;
grant execute on function tablegate.approval_use(text, text, text, boolean) to authenticated;
grant execute on function tablegate.approval_decide(uuid, boolean) to authenticated;
grant execute on function tablegate.approver_role(), tablegate.is_approver(),
  tablegate.approval_state(tablegate.approvals) to anon, authenticated, service_role;

-- +goose Down
drop function tablegate.approval_decide(uuid, boolean);
drop function tablegate.approval_use(text, text, text, boolean);
drop function tablegate.approval_request(text, text, text, interval, interval);
drop function tablegate.approval_state(tablegate.approvals);
drop table tablegate.approvals;
drop function tablegate.is_approver();
drop function tablegate.set_approver_role(text);
drop function tablegate.approver_role();
delete from tablegate.settings where key = 'approver_role';
