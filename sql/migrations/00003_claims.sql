-- The tablegate schema, its settings, and the claim helpers every policy
-- uses: the verified claims, the caller's active tenant, anonymous
-- sign-ins, roles.
--
-- One setting, tenant_claim, names the claim that carries the caller's
-- active tenant (a dotted path such as 'tenant_id' or
-- 'app_metadata.org_id'). current_tenant_id(), the tenant plugin (Go reads
-- it back with tablegate.tenant_claim()), the storage and the realtime
-- policies all read it, so one rename changes all of them:
--
--   select tablegate.set_tenant_claim('app_metadata.org_id');
--
-- A path with one segment also falls back to the same key under
-- app_metadata, so the default 'tenant_id' reads claim tenant_id, else
-- app_metadata.tenant_id. Nothing is ever read from user_metadata (users
-- edit it themselves).
--
-- How the functions of schema tablegate are written:
--
--   * Helpers a policy calls on every statement (claims(), current_tenant_id(),
--     is_anonymous(), has_role(), ...) are SQL functions without a SET
--     clause, so that Postgres inlines them into the calling query and a
--     policy's (select tablegate.current_tenant_id()) is planned with the
--     statement and costs microseconds; a SQL function with a SET clause
--     is never inlined and switches search_path on every call. Every name
--     in their bodies, operators and types included, is schema-qualified,
--     so the caller's search_path cannot change what they do.
--   * Every other function sets search_path = pg_catalog, pg_temp. With an
--     empty path Postgres still searches the session's temporary schema
--     first for tables and types: a role that can run SQL could create a
--     domain pg_temp.jsonb (or uuid, text) whose check calls its own
--     function, and have it run with the rights of a SECURITY DEFINER
--     function's owner (also in a function such a definer calls, which
--     runs as the owner too). Naming pg_temp last, as the PostgreSQL manual
--     advises, makes the built-in types always win. definer_test.go checks
--     every function and the attack.

-- +goose Up
create schema tablegate;
grant usage on schema tablegate to anon, authenticated, service_role;

create table tablegate.settings (
  key   text primary key,
  value text not null
);
comment on table tablegate.settings is 'tablegate settings (tenant_claim, ...). Change through tablegate.set_* functions.';

-- RLS is on for the API roles (read-only, and they hold no write grant).
-- It is not forced: the owner, a non-superuser on managed databases, writes
-- settings through tablegate.set_tenant_claim().
alter table tablegate.settings enable row level security;
create policy settings_read on tablegate.settings for select to anon, authenticated, service_role using (true);
grant select on tablegate.settings to anon, authenticated, service_role;

-- +goose StatementBegin
create function tablegate.claims() returns jsonb
language sql stable parallel safe
as $$
  select nullif(pg_catalog.current_setting('request.jwt.claims', true), '')::pg_catalog.jsonb
$$;
-- +goose StatementEnd
comment on function tablegate.claims() is 'The verified claims of the caller (request.jwt.claims) as jsonb; NULL without.';

-- claim_text reads a claim by dotted path as text; NULL when absent.
-- +goose StatementBegin
create function tablegate.claim_text(path text) returns text
language sql stable parallel safe
as $$
  select nullif(pg_catalog.current_setting('request.jwt.claims', true), '')::pg_catalog.jsonb
         operator(pg_catalog.#>>) pg_catalog.string_to_array(path, '.')
$$;
-- +goose StatementEnd

-- claim_array returns the claim at key as a jsonb array, reading the top
-- level first and app_metadata second; never user_metadata.
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
create function tablegate.claim_array(key text) returns jsonb
language sql stable parallel safe
as $$
  select tablegate.claim_array_of(tablegate.claims(), key)
$$;
-- +goose StatementEnd

-- has_role is true when the verified claims list the role (claim roles,
-- else app_metadata.roles).
-- +goose StatementBegin
create function tablegate.has_role(role text) returns boolean
language sql stable parallel safe
as $$
  select tablegate.claim_array('roles') operator(pg_catalog.?) role
$$;
-- +goose StatementEnd

-- is_anonymous is true for anonymous sign-ins (claim is_anonymous = true).
-- They run as role authenticated, so a grant cannot tell them apart from
-- full users; row policies must: "not (select tablegate.is_anonymous())".
-- +goose StatementBegin
create function tablegate.is_anonymous() returns boolean
language sql stable parallel safe
as $$
  select coalesce(
    nullif(pg_catalog.current_setting('request.jwt.claims', true), '')::pg_catalog.jsonb
      operator(pg_catalog.->) 'is_anonymous' operator(pg_catalog.=) 'true'::pg_catalog.jsonb,
    false)
$$;
-- +goose StatementEnd

-- +goose StatementBegin
create function tablegate.is_full_user() returns boolean
language sql stable parallel safe
as $$
  select coalesce(nullif(pg_catalog.current_setting('request.jwt.claims', true), '')::pg_catalog.jsonb
                  operator(pg_catalog.->>) 'sub', '') operator(pg_catalog.<>) ''
     and not tablegate.is_anonymous()
$$;
-- +goose StatementEnd
comment on function tablegate.is_full_user() is
  'True for a signed-in user (claim sub present) that is not an anonymous sign-in.';

-- tenant_claim() returns the tenant_claim setting as a constant, and
-- approver_role() (schema tablegate's approvals) the approver_role
-- setting: a function that reads a table is never inlined. The trigger
-- settings_functions rewrites them whenever their setting changes;
-- replacing a function invalidates every cached plan that inlined it, so
-- a rename takes effect at once, also on pooled connections with prepared
-- statements. They stay STABLE, not IMMUTABLE: the planner folds an
-- immutable call into a constant without recording the plan's dependency
-- on the function, and cached plans would keep the old value.
-- +goose StatementBegin
create function tablegate.tenant_claim() returns text
language sql stable parallel safe
as $$select 'tenant_id'::pg_catalog.text$$;
-- +goose StatementEnd
insert into tablegate.settings (key, value) values ('tenant_claim', 'tenant_id');

-- +goose StatementBegin
create function tablegate.write_setting_functions() returns trigger
language plpgsql security definer
set search_path = pg_catalog, pg_temp
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
create trigger settings_functions
  after insert or update or delete on tablegate.settings
  for each row execute function tablegate.write_setting_functions();

-- set_tenant_claim renames the tenant claim for every reader at once. It
-- takes dotted paths of string claims only: not under user_metadata (a
-- tenant read from it would let anyone pick their tenant), not a claim
-- that is never a string (exp, iat, nbf, auth_time, aud, amr,
-- is_anonymous, app_metadata, a path ending in roles or memberships), at
-- most 8 segments of at most 63 characters. Go validates the same rules
-- (plugin.ValidateClaimPath).
-- +goose StatementBegin
create function tablegate.set_tenant_claim(path text) returns void
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
begin
  if path is null or path !~ '^[A-Za-z_][A-Za-z0-9_]{0,62}(\.[A-Za-z_][A-Za-z0-9_]{0,62}){0,7}$' then
    raise exception 'tenant claim must be a dotted path of identifiers, got %', coalesce(quote_literal(path), 'NULL')
      using errcode = '22023';
  end if;
  if split_part(path, '.', 1) = 'user_metadata' then
    raise exception 'tenant claim may not be read from user_metadata (users can edit it), got %', quote_literal(path)
      using errcode = '22023';
  end if;
  if path in ('exp', 'iat', 'nbf', 'auth_time', 'aud', 'amr', 'is_anonymous', 'app_metadata')
     or path ~ '(^|\.)(roles|memberships)$' then
    raise exception 'tenant claim must name a string claim, % is not one', quote_literal(path)
      using errcode = '22023';
  end if;
  insert into tablegate.settings (key, value) values ('tenant_claim', path)
  on conflict (key) do update set value = excluded.value;
end
$$;
-- +goose StatementEnd

-- tenant_text is the raw text of the configured tenant claim (falling back
-- to app_metadata.<claim> for a one-segment claim), before the uuid check.
-- +goose StatementBegin
create function tablegate.tenant_text() returns text
language sql stable parallel safe
as $$
  select coalesce(
    tablegate.claim_text(tablegate.tenant_claim()),
    case when pg_catalog.strpos(tablegate.tenant_claim(), '.') operator(pg_catalog.=) 0
         then tablegate.claim_text('app_metadata.' operator(pg_catalog.||) tablegate.tenant_claim()) end)
$$;
-- +goose StatementEnd

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

-- is_uuid_text maps hex digits to 'x' (translate) instead of matching a
-- regular expression: Postgres rebuilds a regex's matching states on every
-- evaluation (≈ 5 µs), translate costs ≈ 1 µs. An 'x' in the input maps
-- to '!', so 'xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx' is not a uuid.
-- +goose StatementBegin
create function tablegate.is_uuid_text(v text) returns boolean
language sql immutable parallel safe
as $$
  select pg_catalog.translate(v, 'xX0123456789abcdefABCDEF', '!!xxxxxxxxxxxxxxxxxxxxxx')
         operator(pg_catalog.=) 'xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx'
$$;
-- +goose StatementEnd

-- +goose StatementBegin
create function tablegate.tenant_of(claims jsonb) returns uuid
language sql stable parallel safe
as $$
  select pg_catalog.substring(tablegate.tenant_text_of(claims),
    '^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$')::pg_catalog.uuid
$$;
-- +goose StatementEnd
comment on function tablegate.tenant_of(jsonb) is
  'The tenant a claims document names (tenant claim, app_metadata fallback), or NULL when absent or not a uuid.';

-- current_tenant_id returns the caller's active tenant from the configured
-- claim (falling back to app_metadata.<claim> for a one-segment path), or
-- NULL when absent or not a uuid.
-- +goose StatementBegin
create function tablegate.current_tenant_id() returns uuid
language sql stable parallel safe
as $$
  select tablegate.tenant_of(tablegate.claims())
$$;
-- +goose StatementEnd

-- exclude_anonymous adds restrictive policies that refuse every insert,
-- update and delete by anonymous sign-ins on a table, whatever its other
-- (permissive) policies allow; include_anonymous removes them again.
-- +goose StatementBegin
create function tablegate.exclude_anonymous(tbl regclass) returns void
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
declare
  cmd text;
begin
  foreach cmd in array array['insert', 'update', 'delete'] loop
    execute format('drop policy if exists %I on %s', 'tablegate_no_anonymous_' || cmd, tbl);
    execute format(
      'create policy %I on %s as restrictive for %s to authenticated %s',
      'tablegate_no_anonymous_' || cmd, tbl, cmd,
      case cmd
        when 'insert' then 'with check (not (select tablegate.is_anonymous()))'
        when 'update' then 'using (not (select tablegate.is_anonymous())) with check (not (select tablegate.is_anonymous()))'
        else 'using (not (select tablegate.is_anonymous()))'
      end);
  end loop;
end
$$;
-- +goose StatementEnd
comment on function tablegate.exclude_anonymous(regclass) is
  'Adds restrictive policies refusing insert/update/delete by anonymous sign-ins.';
-- +goose StatementBegin
create function tablegate.include_anonymous(tbl regclass) returns void
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
declare
  cmd text;
begin
  foreach cmd in array array['insert', 'update', 'delete'] loop
    execute format('drop policy if exists %I on %s', 'tablegate_no_anonymous_' || cmd, tbl);
  end loop;
end
$$;
-- +goose StatementEnd
comment on function tablegate.include_anonymous(regclass) is
  'Removes the policies added by tablegate.exclude_anonymous.';

grant execute on function tablegate.claims(), tablegate.claim_text(text), tablegate.claim_array_of(jsonb, text),
  tablegate.claim_array(text), tablegate.has_role(text), tablegate.is_anonymous(), tablegate.is_full_user(),
  tablegate.tenant_claim(), tablegate.tenant_text(), tablegate.tenant_text_of(jsonb), tablegate.is_uuid_text(text),
  tablegate.tenant_of(jsonb), tablegate.current_tenant_id()
  to anon, authenticated, service_role;
revoke all on function tablegate.write_setting_functions(), tablegate.set_tenant_claim(text),
  tablegate.exclude_anonymous(regclass), tablegate.include_anonymous(regclass)
  from public, anon, authenticated, service_role;

-- +goose Down
-- +goose StatementBegin
do $$
declare
  r record;
begin
  for r in select p.polname, p.polrelid::regclass as tbl from pg_policy p
           where p.polname in ('tablegate_no_anonymous_insert', 'tablegate_no_anonymous_update', 'tablegate_no_anonymous_delete')
  loop
    execute format('drop policy %I on %s', r.polname, r.tbl);
  end loop;
end
$$;
-- +goose StatementEnd
drop schema tablegate cascade;
