-- Approvals belong to a tenant (docs/approvals.md, "Tenants").
--
-- As created in 00005, approvals had no tenant and the approver role was a
-- global claim role: an approver of tenant A listed and decided tenant B's
-- approvals, and an approval granted while a user acted in tenant A was
-- spent in tenant B by the same user. Here:
--
--   * tenant_id records the requester's active tenant
--     (tablegate.current_tenant_id()) when the approval is opened; NULL in
--     a tenant-less project (no tenant claim).
--   * Reading, deciding and spending are confined to the caller's active
--     tenant: a row is visible, decidable and usable only when its
--     tenant_id is not distinct from current_tenant_id().
--   * Approvers are approvers of that tenant (tablegate.is_approver_of),
--     as the setting
--     approver_source says (tablegate.set_approver_source):
--       'memberships' (default)  the memberships table: a tenant
--                                membership of the caller holding
--                                approver_role() (immediate truth);
--       'claims'                 the token's memberships claim: an entry
--                                {"scope":"tenant","id":<tenant>,"roles":[…]}
--                                holding approver_role() (as fresh as the token);
--       'global_role'            the claim role approver_role() in any
--                                tenant (the behaviour of 00005; opt-in).
--     For a tenant-less approval the approver holds the claim role
--     approver_role() (there is no tenant to be a member of).
--   * An approval is spent only by the same actor, permission, table, key
--     and tenant.
--
-- The functions keep their signatures (callers and sqlc queries are
-- unchanged). tablegate.is_approver() keeps its meaning (the claim role,
-- as for tenant-less approvals); approvals no longer use it. The SECURITY DEFINER functions run as the tables' owner;
-- memberships forces row-level security, so the owner reads it through
-- the policy memberships_owner_read, as approvals_owner does for approvals
-- (an owner on managed Postgres is neither superuser nor bypasses RLS).

-- +goose Up
alter table tablegate.approvals add column tenant_id uuid;
comment on column tablegate.approvals.tenant_id is 'the requester''s active tenant when the approval was opened; NULL without a tenant claim';

drop index tablegate.approvals_one_pending_idx;
-- At most one pending approval per requester, permission, target and tenant.
create unique index approvals_one_pending_idx on tablegate.approvals
  (actor, permission, target_table, target_key, coalesce(tenant_id, '00000000-0000-0000-0000-000000000000'::uuid))
  where state = 'pending';
create index approvals_tenant_idx on tablegate.approvals (tenant_id, requested_at desc);

create policy memberships_owner_read on tablegate.memberships for select
  using (current_user = (select pg_catalog.pg_get_userbyid(c.relowner) from pg_catalog.pg_class c
                         where c.oid = 'tablegate.memberships'::pg_catalog.regclass));

-- approver_source returns how approvers of a tenant are recognised.
create function tablegate.approver_source() returns text
language sql stable parallel safe
as $$
  select coalesce((select s.value from tablegate.settings s where s.key operator(pg_catalog.=) 'approver_source'),
                  'memberships')
$$;

-- set_approver_source chooses memberships (default), claims or global_role.
-- +goose StatementBegin
create function tablegate.set_approver_source(source text) returns void
language plpgsql volatile
set search_path = ''
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
revoke all on function tablegate.set_approver_source(text) from public, anon, authenticated, service_role;

-- is_approver_of is true for a signed-in, non-anonymous caller who is an
-- approver of tenant (see approver_source); for a NULL tenant, a caller
-- holding the claim role approver_role(). PL/pgSQL, so that callers who
-- may not read memberships (anon) get false instead of a permission
-- error; policies call it once per statement as an init-plan.
-- +goose StatementBegin
create function tablegate.is_approver_of(tenant uuid) returns boolean
language plpgsql stable
set search_path = ''
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
grant execute on function tablegate.approver_source(), tablegate.is_approver_of(uuid) to anon, authenticated, service_role;

-- Requesters read their own approvals and approvers those of their tenant,
-- both only in the caller's active tenant. The sub-selects are init-plans:
-- evaluated once per statement, not per row.
drop policy approvals_read on tablegate.approvals;
create policy approvals_read on tablegate.approvals for select to authenticated
  using (tenant_id is not distinct from (select tablegate.current_tenant_id())
         and (actor = (select auth.uid())
              or (select tablegate.is_approver_of(tablegate.current_tenant_id()))));

-- +goose StatementBegin
create or replace function tablegate.approval_request(
  permission text, target_table text, target_key text,
  ttl interval, valid_for interval
) returns table (approval_id uuid, outcome text)
language plpgsql volatile security definer
set search_path = ''
as $$
declare
  me uuid := auth.uid();
  tenant uuid := tablegate.current_tenant_id();
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

-- +goose StatementBegin
create or replace function tablegate.approval_use(
  permission text, target_table text, target_key text, single_use boolean
) returns uuid
language plpgsql volatile security definer
set search_path = ''
as $$
declare
  me uuid := auth.uid();
  tenant uuid := tablegate.current_tenant_id();
  a tablegate.approvals;
  used uuid;
begin
  if me is null then
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

-- approval_decide: the caller must be an approver of their active tenant
-- (42501 not_approver), the approval must exist in that tenant (P0002
-- otherwise: another tenant's approval is not found), must not be the
-- caller's own (42501 own_request) and must be pending (55000).
-- +goose StatementBegin
create or replace function tablegate.approval_decide(approval_id uuid, approve boolean)
returns setof tablegate.approvals
language plpgsql volatile security definer
set search_path = ''
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

-- +goose Down
-- The definitions of 00005, restored.
drop policy approvals_read on tablegate.approvals;
create policy approvals_read on tablegate.approvals for select to authenticated
  using (actor = (select auth.uid()) or (select tablegate.is_approver()));

-- +goose StatementBegin
create or replace function tablegate.approval_request(
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
  end if;
  insert into tablegate.approvals (permission, actor, target_table, target_key, expires_at, valid_for)
  values (approval_request.permission, me, approval_request.target_table, approval_request.target_key,
          now() + ttl, approval_request.valid_for)
  returning * into a;
  return query select a.id, 'pending'::text;
end
$$;
-- +goose StatementEnd

-- +goose StatementBegin
create or replace function tablegate.approval_use(
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
  update tablegate.approvals set used_at = now()
  where id = a.id and state = 'approved' and used_at is null and expires_at > now()
  returning id into used;
  return used;
end
$$;
-- +goose StatementEnd

-- +goose StatementBegin
create or replace function tablegate.approval_decide(approval_id uuid, approve boolean)
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

drop function tablegate.is_approver_of(uuid);
drop function tablegate.set_approver_source(text);
drop function tablegate.approver_source();
delete from tablegate.settings where key = 'approver_source';
drop policy memberships_owner_read on tablegate.memberships;
drop index tablegate.approvals_tenant_idx;
drop index tablegate.approvals_one_pending_idx;
-- Approvals of several tenants for one target may no longer fit the
-- tenant-less unique index: keep the newest pending one of each.
update tablegate.approvals a set state = 'expired'
where a.state = 'pending' and exists (
  select 1 from tablegate.approvals b
  where b.state = 'pending' and b.actor = a.actor and b.permission = a.permission
    and b.target_table = a.target_table and b.target_key = a.target_key
    and (b.requested_at, b.id) > (a.requested_at, a.id));
create unique index approvals_one_pending_idx on tablegate.approvals (actor, permission, target_table, target_key)
  where state = 'pending';
alter table tablegate.approvals drop column tenant_id;
