-- Membership checks with less work per call.
--
-- member_tenant_id() is what the demo's read policy and
-- enable_tenant_policies(…, require_membership => true) evaluate once per
-- statement. Profiled as tablegate runs it (role and claims set, then the
-- statement, in a new transaction each time; perf on the backend), the call
-- cost ≈ 34 µs of Postgres CPU, of which the memberships probe ≈ 9 and the
-- claims parse ≈ 7. The rest was avoidable:
--
--   * two regular expressions (the tenant's uuid check by regex substring
--     ≈ 4.7 µs, the sub's ≈ 2.2): Postgres rebuilds a regex's matching
--     states on every evaluation. A uuid in canonical form is now recognised by
--     mapping every hex digit to 'x' (translate) and comparing the result
--     with 'xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx' (≈ 1 µs): the same strings
--     as the regex ^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-…-[0-9A-Fa-f]{12}$;
--   * a second statement run through the executor on every call (the
--     memberships claim search, "ms <> '[]' and exists (…)", even without
--     a memberships claim): the claim is now searched only when the token
--     carries one, and member_tenant_id() searches it with jsonb
--     containment, a plain expression (its ids are uuids, compared as
--     canonical text before and now);
--   * every PL/pgSQL statement is an expression Postgres prepares again in
--     each transaction: fewer of them.
--
-- Measured with bench/BenchmarkPolicyDB and BenchmarkHelpers
-- (bench/BENCHMARKS.md). Every answer stays the same:
-- equivalence_test.go compares both functions with version 16's for every
-- kind of caller, both tenant claims and roles.

-- +goose Up
-- tenant_text_of: the tenant claim's text (the configured claim, then the
-- app_metadata fallback), unchecked; tenant_of and member_tenant_id share
-- it. is_uuid_text: true for a uuid in canonical form (hex digits of either
-- case), the strings ^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-
-- [0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$ matches, NULL for NULL. Both inlinable.
-- +goose StatementBegin
create function tablegate.tenant_text_of(claims jsonb) returns text
language sql stable parallel safe
as $$
  select coalesce(
    claims operator(pg_catalog.#>>) pg_catalog.string_to_array(tablegate.tenant_claim(), '.'),
    case when pg_catalog.strpos(tablegate.tenant_claim(), '.') operator(pg_catalog.=) 0
         then claims operator(pg_catalog.#>>)
              pg_catalog.string_to_array('app_metadata.' operator(pg_catalog.||) tablegate.tenant_claim(), '.') end)
$$;
-- +goose StatementEnd

-- +goose StatementBegin
create function tablegate.is_uuid_text(v text) returns boolean
language sql immutable parallel safe
as $$
  select pg_catalog.translate(v, '0123456789abcdefABCDEF', 'xxxxxxxxxxxxxxxxxxxxxx')
         operator(pg_catalog.=) 'xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx'
$$;
-- +goose StatementEnd

-- +goose StatementBegin
create or replace function tablegate.tenant_of(claims jsonb) returns uuid
language sql stable parallel safe
as $$
  select pg_catalog.substring(tablegate.tenant_text_of(claims),
    '^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$')::pg_catalog.uuid
$$;
-- +goose StatementEnd
grant execute on function tablegate.tenant_text_of(jsonb), tablegate.is_uuid_text(text) to anon, authenticated, service_role;

-- +goose StatementBegin
create or replace function tablegate.member_tenant_id(role text default null) returns uuid
language plpgsql stable security definer parallel safe
set search_path = ''
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

-- is_member keeps searching the claim element by element: its scope and id
-- are any text, and an id the claim holds as a JSON number ("id": 7) is a
-- membership of '7', which containment would not find.
-- +goose StatementBegin
create or replace function tablegate.is_member(scope text, id text, role text default null) returns boolean
language plpgsql stable security definer parallel safe
set search_path = ''
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

-- +goose Down
-- The definitions of 00017, restored.
-- +goose StatementBegin
create or replace function tablegate.is_member(scope text, id text, role text default null) returns boolean
language plpgsql stable security definer parallel safe
set search_path = ''
as $$
declare
  c jsonb := tablegate.claims();
  ms jsonb := tablegate.claim_array_of(c, 'memberships');
  s text := c ->> 'sub';
begin
  if scope is null or id is null then
    return false;
  end if;
  if ms <> '[]'::jsonb and exists (
       select 1 from jsonb_array_elements(ms) e
       where e ->> 'scope' = is_member.scope and e ->> 'id' = is_member.id
         and (is_member.role is null
              or (jsonb_typeof(e -> 'roles') = 'array' and (e -> 'roles') ? is_member.role))) then
    return true;
  end if;
  if s is null or s !~ '^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$' then
    return false;
  end if;
  perform from tablegate.memberships m
  where m.user_id = s::uuid and m.scope = is_member.scope and m.scope_id = is_member.id
    and (is_member.role is null or is_member.role = any (m.roles));
  return found;
end
$$;
-- +goose StatementEnd

-- +goose StatementBegin
create or replace function tablegate.member_tenant_id(role text default null) returns uuid
language plpgsql stable security definer parallel safe
set search_path = ''
as $$
declare
  c jsonb := tablegate.claims();
  t uuid := tablegate.tenant_of(c);
  ms jsonb;
  s text;
begin
  if t is null then
    return null;
  end if;
  ms := tablegate.claim_array_of(c, 'memberships');
  if ms <> '[]'::jsonb and exists (
       select 1 from jsonb_array_elements(ms) e
       where e ->> 'scope' = 'tenant' and e ->> 'id' = t::text
         and (member_tenant_id.role is null
              or (jsonb_typeof(e -> 'roles') = 'array' and (e -> 'roles') ? member_tenant_id.role))) then
    return t;
  end if;
  s := c ->> 'sub';
  if s is null or s !~ '^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$' then
    return null;
  end if;
  perform from tablegate.memberships m
  where m.user_id = s::uuid and m.scope = 'tenant' and m.scope_id = t::text
    and (member_tenant_id.role is null or member_tenant_id.role = any (m.roles));
  if found then
    return t;
  end if;
  return null;
end
$$;
-- +goose StatementEnd

-- +goose StatementBegin
create or replace function tablegate.tenant_of(claims jsonb) returns uuid
language sql stable parallel safe
as $$
  select pg_catalog.substring(
    coalesce(
      claims operator(pg_catalog.#>>) pg_catalog.string_to_array(tablegate.tenant_claim(), '.'),
      case when pg_catalog.strpos(tablegate.tenant_claim(), '.') operator(pg_catalog.=) 0
           then claims operator(pg_catalog.#>>)
                pg_catalog.string_to_array('app_metadata.' operator(pg_catalog.||) tablegate.tenant_claim(), '.') end),
    '^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$')::pg_catalog.uuid
$$;
-- +goose StatementEnd
drop function tablegate.is_uuid_text(text);
drop function tablegate.tenant_text_of(jsonb);
