-- Policy helpers at the cost of an owner policy.
--
-- Measured before this migration (PG 15, demo claims of ~500 bytes, see
-- bench/BENCHMARKS.md): is_member ≈ 100 µs a call (a SECURITY DEFINER SQL
-- function with SET search_path: never inlined, its body planned again in
-- every statement), has_role ≈ 50 µs and is_approver ≈ 125 µs (SQL
-- functions with a CTE or a SET clause, planned per statement),
-- current_tenant_id ≈ 8 µs (the claims parsed twice per call). The demo's
-- tenant + membership policy ran a GET at 0.24× and a 50-row list at 0.09×
-- the owner policy.
--
-- What changes, every answer staying the same (sql/migrations
-- helpers_equivalence_test.go compares each helper with version 16's for
-- every kind of caller):
--
--   claims()            new: the verified claims as jsonb (request.jwt.claims),
--                       inlinable.
--   tenant_of(claims)   new: the tenant of a claims document (the configured
--                       claim, app_metadata fallback, uuid or NULL); inlinable.
--   current_tenant_id() tenant_of(claims()): the claims parsed once per call
--                       instead of twice, uuid checked by one regex
--                       substring.
--   claim_array(key),   inlinable (no CTE, no SET): planned with the calling
--   has_role(role)      statement.
--   approver_role()     a function returning a constant, rewritten by a
--                       trigger whenever the approver_role setting changes
--                       (as tenant_claim() since 00015), so that
--   is_approver()       is inlinable.
--   is_member(...)      PL/pgSQL, SECURITY DEFINER with search_path pinned:
--                       its statements are planned once per session, not once
--                       per calling statement (≈ 10 µs a call).
--   member_tenant_id()  new: the caller's active tenant when the caller holds
--                       a membership of it (claims or table), else NULL. One
--                       index probe; the per-statement form of
--                       "tenant_id = current_tenant_id() and
--                        is_member('tenant', tenant_id::text)":
--                         tenant_id = (select tablegate.member_tenant_id())
--   tenant_topic_allowed(topic)
--                       reads the tenant once instead of twice.
--
-- Inlinable helpers carry no SET clause; every name in their bodies,
-- operators and types included, is schema-qualified, so the caller's
-- search_path cannot change what they do. SECURITY DEFINER functions keep
-- search_path = ''. Nothing is read from user_metadata.

-- +goose Up
-- +goose StatementBegin
create function tablegate.claims() returns jsonb
language sql stable parallel safe
as $$
  select nullif(pg_catalog.current_setting('request.jwt.claims', true), '')::pg_catalog.jsonb
$$;
-- +goose StatementEnd
comment on function tablegate.claims() is 'The verified claims of the caller (request.jwt.claims) as jsonb; NULL without.';

-- +goose StatementBegin
create function tablegate.tenant_of(claims jsonb) returns uuid
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
comment on function tablegate.tenant_of(jsonb) is
  'The tenant a claims document names (tenant claim, app_metadata fallback), or NULL when absent or not a uuid.';

-- +goose StatementBegin
create or replace function tablegate.current_tenant_id() returns uuid
language sql stable parallel safe
as $$
  select tablegate.tenant_of(tablegate.claims())
$$;
-- +goose StatementEnd

-- claim_array_of is claim_array over a given claims document.
-- +goose StatementBegin
create function tablegate.claim_array_of(claims jsonb, key text) returns jsonb
language sql stable parallel safe
as $$
  select case
    when pg_catalog.jsonb_typeof(claims operator(pg_catalog.->) key) operator(pg_catalog.=) 'array'
      then claims operator(pg_catalog.->) key
    when pg_catalog.jsonb_typeof(claims operator(pg_catalog.->) 'app_metadata' operator(pg_catalog.->) key) operator(pg_catalog.=) 'array'
      then claims operator(pg_catalog.->) 'app_metadata' operator(pg_catalog.->) key
    else '[]'::pg_catalog.jsonb
  end
$$;
-- +goose StatementEnd

-- +goose StatementBegin
create or replace function tablegate.claim_array(key text) returns jsonb
language sql stable parallel safe
as $$
  select tablegate.claim_array_of(tablegate.claims(), key)
$$;
-- +goose StatementEnd

-- +goose StatementBegin
create or replace function tablegate.has_role(role text) returns boolean
language sql stable parallel safe
as $$
  select tablegate.claim_array('roles') operator(pg_catalog.?) role
$$;
-- +goose StatementEnd

-- tenant_claim() and approver_role() return the current value of their
-- setting as a constant, rewritten by this trigger whenever the setting
-- changes (replacing a function invalidates every cached plan that inlined
-- it, also on pooled connections).
-- +goose StatementBegin
create function tablegate.write_setting_functions() returns trigger
language plpgsql security definer
set search_path = ''
as $$
declare
  k text;
  v text;
begin
  foreach k in array array['tenant_claim', 'approver_role'] loop
    if (tg_op <> 'DELETE' and new.key = k) or (tg_op <> 'INSERT' and old.key = k) then
      v := case k when 'tenant_claim' then 'tenant_id' else 'approver' end;
      if tg_op <> 'DELETE' and new.key = k then
        v := new.value;
      end if;
      execute format(
        'create or replace function tablegate.%I() returns text language sql stable parallel safe as %L',
        k, format('select %L::pg_catalog.text', v));
    end if;
  end loop;
  return null;
end
$$;
-- +goose StatementEnd
revoke all on function tablegate.write_setting_functions() from public, anon, authenticated, service_role;

drop trigger settings_tenant_claim_function on tablegate.settings;
create trigger settings_functions
  after insert or update or delete on tablegate.settings
  for each row execute function tablegate.write_setting_functions();

-- +goose StatementBegin
create or replace function tablegate.approver_role() returns text
language sql stable parallel safe
as $$ select 'approver'::pg_catalog.text $$;
-- +goose StatementEnd
-- Bring both in line with the current settings.
update tablegate.settings set value = value where key in ('tenant_claim', 'approver_role');

-- +goose StatementBegin
create or replace function tablegate.is_approver() returns boolean
language sql stable parallel safe
as $$
  select auth.uid() is not null
     and not tablegate.is_anonymous()
     and tablegate.has_role(tablegate.approver_role())
$$;
-- +goose StatementEnd

-- is_member and member_tenant_id: PL/pgSQL, so that their statements are
-- planned once per session; SECURITY DEFINER (they read the memberships
-- table whatever the caller's grants, only ever for the claims' sub) with
-- search_path pinned. The claims are parsed once per call; the memberships
-- claim is searched only when present; a sub that is not a uuid is no
-- member (never an error).
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
create function tablegate.member_tenant_id(role text default null) returns uuid
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
comment on function tablegate.member_tenant_id(text) is
  'The caller''s active tenant when the caller holds a membership of it (with role, when given), else NULL. '
  'Policies: tenant_id = (select tablegate.member_tenant_id()).';

-- +goose StatementBegin
create or replace function tablegate.tenant_topic_allowed(topic text) returns boolean
language sql stable parallel safe
as $$
  select coalesce(
    not tablegate.is_anonymous()
    and pg_catalog.split_part(topic, ':', 1) operator(pg_catalog.=) 'tenant'
    and pg_catalog.split_part(topic, ':', 2) operator(pg_catalog.=) tablegate.current_tenant_id()::pg_catalog.text,
    false)
$$;
-- +goose StatementEnd

grant execute on function tablegate.claims(), tablegate.tenant_of(jsonb), tablegate.claim_array_of(jsonb, text),
  tablegate.member_tenant_id(text) to anon, authenticated, service_role;

-- +goose Down
-- The definitions of 00014/00015 (tenant_topic_allowed), 00004 (is_member),
-- 00005 (approver_role, is_approver), 00003 (claim_array, has_role) and
-- 00015 (current_tenant_id, the tenant_claim trigger), restored.
-- +goose StatementBegin
create or replace function tablegate.tenant_topic_allowed(topic text) returns boolean
language sql stable parallel safe
as $$
  select coalesce(
    not tablegate.is_anonymous()
    and (topic operator(pg_catalog.=) ('tenant:' operator(pg_catalog.||) tablegate.current_tenant_id()::pg_catalog.text)
         or pg_catalog.starts_with(topic,
              'tenant:' operator(pg_catalog.||) tablegate.current_tenant_id()::pg_catalog.text operator(pg_catalog.||) ':')),
    false)
$$;
-- +goose StatementEnd

drop function tablegate.member_tenant_id(text);
-- +goose StatementBegin
create or replace function tablegate.is_member(scope text, id text, role text default null) returns boolean
language sql stable security definer
set search_path = ''
as $$
  with me as (
    select case when s ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' then s::uuid end as uid
    from (select nullif(current_setting('request.jwt.claims', true), '')::jsonb ->> 'sub' as s) x
  )
  select exists (
    select 1 from jsonb_array_elements(tablegate.claim_array('memberships')) e
    where e ->> 'scope' = is_member.scope and e ->> 'id' = is_member.id
      and (is_member.role is null
           or (jsonb_typeof(e -> 'roles') = 'array' and (e -> 'roles') ? is_member.role))
  ) or exists (
    select 1 from tablegate.memberships m, me
    where m.user_id = me.uid
      and m.scope = is_member.scope and m.scope_id = is_member.id
      and (is_member.role is null or is_member.role = any (m.roles))
  )
$$;
-- +goose StatementEnd

-- +goose StatementBegin
create or replace function tablegate.is_approver() returns boolean
language sql stable
set search_path = ''
as $$
  select auth.uid() is not null
     and not tablegate.is_anonymous()
     and tablegate.has_role(tablegate.approver_role())
$$;
-- +goose StatementEnd
-- +goose StatementBegin
create or replace function tablegate.approver_role() returns text
language sql stable
set search_path = ''
as $$
  select coalesce((select value from tablegate.settings where key = 'approver_role'), 'approver')
$$;
-- +goose StatementEnd

drop trigger settings_functions on tablegate.settings;
drop function tablegate.write_setting_functions();
create trigger settings_tenant_claim_function
  after insert or update or delete on tablegate.settings
  for each row execute function tablegate.write_tenant_claim_function();
update tablegate.settings set value = value where key = 'tenant_claim';

-- +goose StatementBegin
create or replace function tablegate.has_role(role text) returns boolean
language sql stable
set search_path = ''
as $$
  select tablegate.claim_array('roles') ? role
$$;
-- +goose StatementEnd
-- +goose StatementBegin
create or replace function tablegate.claim_array(key text) returns jsonb
language sql stable
set search_path = ''
as $$
  with j as (select nullif(current_setting('request.jwt.claims', true), '')::jsonb as c)
  select case
    when jsonb_typeof(j.c -> key) = 'array' then j.c -> key
    when jsonb_typeof(j.c -> 'app_metadata' -> key) = 'array' then j.c -> 'app_metadata' -> key
    else '[]'::jsonb
  end
  from j
$$;
-- +goose StatementEnd
drop function tablegate.claim_array_of(jsonb, text);

-- +goose StatementBegin
create or replace function tablegate.current_tenant_id() returns uuid
language sql stable parallel safe
as $$
  select case
    when tablegate.tenant_text() operator(pg_catalog.~*) '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
    then tablegate.tenant_text()::pg_catalog.uuid
  end
$$;
-- +goose StatementEnd
drop function tablegate.tenant_of(jsonb);
drop function tablegate.claims();
