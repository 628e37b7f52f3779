-- Approvals need a full member of the active tenant.
--
-- approval_request and approval_use took the tenant from the token's
-- claim alone. A user removed from a tenant kept opening approvals there
-- (filling its approvers' queue) and spending approved ones until the
-- token expired, and an anonymous sign-in calling the functions directly
-- could open approvals too. Both now refuse (42501) a caller whose tenant
-- claim names a tenant it is not a member of, and an anonymous sign-in;
-- approval_use answers NULL (no approval) for them. Callers without a
-- tenant claim are unchanged.
--
-- approval_test.go (authz) checks both through the API and by SQL.

-- +goose Up
-- +goose StatementBegin
create or replace function tablegate.approval_request(
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

-- +goose StatementBegin
create or replace function tablegate.approval_use(
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

-- +goose Down
-- +goose StatementBegin
create or replace function tablegate.approval_request(
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
set search_path = pg_catalog, pg_temp
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
