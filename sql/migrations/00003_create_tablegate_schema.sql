-- The tablegate schema: settings and the claim helpers every policy uses.
--
-- One setting, tenant_claim, names the claim that carries the caller's
-- active tenant (a dotted path such as 'tenant_id' or 'app_metadata.org_id').
-- current_tenant_id(), the tenant plugin (Go reads it back with
-- tablegate.tenant_claim()), the storage and the realtime policies all read
-- it, so one rename changes all of them:
--
--   select tablegate.set_tenant_claim('app_metadata.org_id');
--
-- A path with one segment also falls back to the same key under
-- app_metadata, so the default 'tenant_id' reads claim tenant_id, else
-- app_metadata.tenant_id.

-- +goose Up
create schema tablegate;
grant usage on schema tablegate to anon, authenticated, service_role;

create table tablegate.settings (
  key   text primary key,
  value text not null
);
comment on table tablegate.settings is 'tablegate settings (tenant_claim, ...). Change through tablegate.set_* functions.';
insert into tablegate.settings (key, value) values ('tenant_claim', 'tenant_id');
-- RLS is on for the API roles (read-only, and they hold no write grant).
-- It is not forced: the owner, a non-superuser on managed databases, writes
-- settings through tablegate.set_tenant_claim().
alter table tablegate.settings enable row level security;
create policy settings_read on tablegate.settings for select to anon, authenticated, service_role using (true);
grant select on tablegate.settings to anon, authenticated, service_role;

-- tenant_claim returns the configured tenant claim path.
create function tablegate.tenant_claim() returns text
language sql stable
set search_path = ''
as $$
  select coalesce((select value from tablegate.settings where key = 'tenant_claim'), 'tenant_id')
$$;

-- set_tenant_claim renames the tenant claim for every reader at once.
-- +goose StatementBegin
create function tablegate.set_tenant_claim(path text) returns void
language plpgsql volatile
set search_path = ''
as $$
begin
  if path is null or path !~ '^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$' then
    raise exception 'tenant claim must be a dotted path of identifiers, got %', coalesce(quote_literal(path), 'NULL')
      using errcode = '22023';
  end if;
  insert into tablegate.settings (key, value) values ('tenant_claim', path)
  on conflict (key) do update set value = excluded.value;
end
$$;
-- +goose StatementEnd
revoke all on function tablegate.set_tenant_claim(text) from public;

-- claim_text reads a claim by dotted path as text; NULL when absent.
create function tablegate.claim_text(path text) returns text
language sql stable
set search_path = ''
as $$
  select nullif(current_setting('request.jwt.claims', true), '')::jsonb #>> string_to_array(path, '.')
$$;

-- current_tenant_id returns the caller's active tenant from the configured
-- claim (falling back to app_metadata.<claim> for a one-segment path), or
-- NULL when absent or not a uuid.
create function tablegate.current_tenant_id() returns uuid
language sql stable
set search_path = ''
as $$
  with c as (select tablegate.tenant_claim() as path)
  select case when v ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' then v::uuid end
  from (
    select coalesce(
      tablegate.claim_text(c.path),
      case when position('.' in c.path) = 0 then tablegate.claim_text('app_metadata.' || c.path) end
    ) as v
    from c
  ) t
$$;

-- is_anonymous is true for anonymous sign-ins (claim is_anonymous = true).
-- Use "not tablegate.is_anonymous()" in write policies to exclude guests.
create function tablegate.is_anonymous() returns boolean
language sql stable
set search_path = ''
as $$
  select coalesce(nullif(current_setting('request.jwt.claims', true), '')::jsonb -> 'is_anonymous' = 'true'::jsonb, false)
$$;

-- claim_array returns the claim at key as a jsonb array, reading the top
-- level first and app_metadata second; never user_metadata (users edit it).
create function tablegate.claim_array(key text) returns jsonb
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

-- has_role is true when the verified claims list the role (claim roles,
-- else app_metadata.roles).
create function tablegate.has_role(role text) returns boolean
language sql stable
set search_path = ''
as $$
  select tablegate.claim_array('roles') ? role
$$;

grant execute on all functions in schema tablegate to anon, authenticated, service_role;
revoke execute on function tablegate.set_tenant_claim(text) from anon, authenticated, service_role;

-- +goose Down
drop schema tablegate cascade;
