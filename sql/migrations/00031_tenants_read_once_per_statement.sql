-- The tenants a caller belongs to are listed once per statement.
--
-- tenants_member_read called tablegate.is_member('tenant', id::text) for
-- every row: the claims parsed and the memberships probed again per tenant,
-- so reading a large tenants table cost seconds, more with a large token.
-- tablegate.member_tenant_ids() answers the same set once (the ids of the
-- memberships claim, then of the memberships table; only canonical
-- lower-case uuids, as is_member compares with id::text), and the policy
-- compares each row's id with it in a sub-select, which the primary key
-- index serves.
--
-- is_uuid_text no longer takes 'xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx' for a
-- uuid (the hex digits were translated to x, and x stayed x): a sub of that
-- shape made the membership helpers raise instead of answering no.

-- +goose Up
-- +goose StatementBegin
create or replace function tablegate.is_uuid_text(v text) returns boolean
language sql immutable parallel safe
as $$
  select pg_catalog.translate(v, 'xX0123456789abcdefABCDEF', '!!xxxxxxxxxxxxxxxxxxxxxx')
         operator(pg_catalog.=) 'xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx'
$$;
-- +goose StatementEnd

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
grant execute on function tablegate.member_tenant_ids() to anon, authenticated, service_role;

drop policy tenants_member_read on tablegate.tenants;
create policy tenants_member_read on tablegate.tenants for select to authenticated
  using (id = any ((select tablegate.member_tenant_ids())::uuid[]));

-- +goose Down
drop policy tenants_member_read on tablegate.tenants;
create policy tenants_member_read on tablegate.tenants for select to authenticated
  using (tablegate.is_member('tenant', id::text));
drop function tablegate.member_tenant_ids();
-- +goose StatementBegin
create or replace function tablegate.is_uuid_text(v text) returns boolean
language sql immutable parallel safe
as $$
  select pg_catalog.translate(v, '0123456789abcdefABCDEF', 'xxxxxxxxxxxxxxxxxxxxxx')
         operator(pg_catalog.=) 'xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx'
$$;
-- +goose StatementEnd
