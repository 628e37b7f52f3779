-- Events about no row need a member of the writer's tenant.
--
-- An action event emitted without a key reaches the subscribers of the
-- writer's active tenant (the tenant claim). A user removed from a tenant
-- kept that claim until the token expired, and an action that emitted
-- such an event put it into the tenant's streams. tablegate.insert_event
-- now refuses (42501) an action event without a key (and without a row
-- image) from a writer whose tenant claim names a tenant it is not a
-- member of. Row events, which carry the row's image (also when their key
-- column is NULL), are unchanged: each subscriber's own policies decide
-- those. Membership is read as the policies read it: from the token's
-- memberships claim first, when an access-token hook issues one, so with
-- that claim a removed member passes until the token expires.
--
-- approver_test.go (TestKeylessEventsNeedMembership) checks it.

-- +goose Up
-- +goose StatementBegin
create or replace function tablegate.insert_event(p_name text, p_tbl text, p_key text, p_payload jsonb, p_image jsonb) returns bigint
language plpgsql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  v_id bigint;
begin
  -- An event about no row reaches the subscribers of the writer's tenant:
  -- the writer must be a member of it (a removed member's claim is not).
  if p_key is null and p_image is null and tablegate.current_tenant_id() is not null
     and tablegate.member_tenant_id() is distinct from tablegate.current_tenant_id() then
    raise exception 'events about no row need a member of the active tenant' using errcode = '42501';
  end if;
  insert into tablegate.events (name, tbl, key, tenant, actor, payload, image)
  values (p_name, p_tbl, p_key, tablegate.current_tenant_id(),
          nullif(nullif(current_setting('request.jwt.claims', true), '')::jsonb ->> 'sub', ''),
          p_payload, p_image)
  returning id into v_id;
  if coalesce(current_setting('tablegate.events_notify', true), '') <> 'off' then
    perform pg_notify('tablegate_events', '');
  end if;
  return v_id;
end
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
create or replace function tablegate.insert_event(p_name text, p_tbl text, p_key text, p_payload jsonb, p_image jsonb) returns bigint
language plpgsql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  v_id bigint;
begin
  insert into tablegate.events (name, tbl, key, tenant, actor, payload, image)
  values (p_name, p_tbl, p_key, tablegate.current_tenant_id(),
          nullif(nullif(current_setting('request.jwt.claims', true), '')::jsonb ->> 'sub', ''),
          p_payload, p_image)
  returning id into v_id;
  if coalesce(current_setting('tablegate.events_notify', true), '') <> 'off' then
    perform pg_notify('tablegate_events', '');
  end if;
  return v_id;
end
$$;
-- +goose StatementEnd
