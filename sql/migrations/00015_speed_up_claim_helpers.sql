-- Make the claim helpers that every policy calls cheap.
--
-- As created in 00003, current_tenant_id(), claim_text(), tenant_claim() and
-- is_anonymous() carry "set search_path = ''" (and so do is_full_user() of
-- 00011 and tenant_topic_allowed() of 00014). A SQL function with a SET
-- clause is never inlined and switches search_path on every call:
-- measured on PG 15, one current_tenant_id() call cost about 650 µs and
-- one is_anonymous() call 15 µs, so a get by key under the tenant policies
-- took about ten times as long as without them.
--
-- Here the same functions are redefined, with the same results, as SQL
-- functions Postgres inlines into the calling query, so a policy's
-- (select tablegate.current_tenant_id()) is planned with the statement and
-- costs microseconds. They carry no search_path setting; instead every
-- name in their bodies, operators and types included, is schema-qualified,
-- so the caller's search_path cannot change what they do.
--
-- tenant_claim() must not read a table to be inlined: it becomes a function
-- returning a constant, rewritten by a trigger whenever the tenant_claim
-- setting changes (tablegate.set_tenant_claim writes the setting).
-- Replacing the function invalidates every cached plan that inlined it, so
-- a rename takes effect at once, also on pooled connections with prepared
-- statements. It stays STABLE, not IMMUTABLE: the planner folds an
-- immutable call into a constant without recording the plan's dependency
-- on the function, and cached plans would keep the old claim.

-- +goose Up
-- +goose StatementBegin
create or replace function tablegate.tenant_claim() returns text
language sql stable parallel safe
as $$ select 'tenant_id'::pg_catalog.text $$;
-- +goose StatementEnd

-- write_tenant_claim_function rewrites tenant_claim() to return the
-- tenant_claim setting (default tenant_id when the row is deleted).
-- +goose StatementBegin
create function tablegate.write_tenant_claim_function() returns trigger
language plpgsql security definer
set search_path = ''
as $$
declare
  v text := 'tenant_id';
begin
  if tg_op <> 'DELETE' and new.key = 'tenant_claim' then
    v := new.value;
  elsif tg_op = 'INSERT' or old.key <> 'tenant_claim' then
    return null; -- another setting
  end if;
  execute format(
    'create or replace function tablegate.tenant_claim() returns text language sql stable parallel safe as %L',
    format('select %L::pg_catalog.text', v));
  return null;
end
$$;
-- +goose StatementEnd
revoke all on function tablegate.write_tenant_claim_function() from public, anon, authenticated, service_role;

create trigger settings_tenant_claim_function
  after insert or update or delete on tablegate.settings
  for each row execute function tablegate.write_tenant_claim_function();

-- Bring tenant_claim() in line with the current setting.
update tablegate.settings set value = value where key = 'tenant_claim';

-- +goose StatementBegin
create or replace function tablegate.claim_text(path text) returns text
language sql stable parallel safe
as $$
  select nullif(pg_catalog.current_setting('request.jwt.claims', true), '')::pg_catalog.jsonb
         operator(pg_catalog.#>>) pg_catalog.string_to_array(path, '.')
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
grant execute on function tablegate.tenant_text() to anon, authenticated, service_role;

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

-- +goose StatementBegin
create or replace function tablegate.is_anonymous() returns boolean
language sql stable parallel safe
as $$
  select coalesce(
    nullif(pg_catalog.current_setting('request.jwt.claims', true), '')::pg_catalog.jsonb
      operator(pg_catalog.->) 'is_anonymous' operator(pg_catalog.=) 'true'::pg_catalog.jsonb,
    false)
$$;
-- +goose StatementEnd

-- +goose StatementBegin
create or replace function tablegate.is_full_user() returns boolean
language sql stable parallel safe
as $$
  select coalesce(nullif(pg_catalog.current_setting('request.jwt.claims', true), '')::pg_catalog.jsonb
                  operator(pg_catalog.->>) 'sub', '') operator(pg_catalog.<>) ''
     and not tablegate.is_anonymous()
$$;
-- +goose StatementEnd

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

-- +goose Down
drop trigger settings_tenant_claim_function on tablegate.settings;
drop function tablegate.write_tenant_claim_function();

-- The definitions of 00003, restored.
-- +goose StatementBegin
create or replace function tablegate.tenant_claim() returns text
language sql stable
set search_path = ''
as $$
  select coalesce((select value from tablegate.settings where key = 'tenant_claim'), 'tenant_id')
$$;
-- +goose StatementEnd

-- +goose StatementBegin
create or replace function tablegate.claim_text(path text) returns text
language sql stable
set search_path = ''
as $$
  select nullif(current_setting('request.jwt.claims', true), '')::jsonb #>> string_to_array(path, '.')
$$;
-- +goose StatementEnd

-- +goose StatementBegin
create or replace function tablegate.current_tenant_id() returns uuid
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
-- +goose StatementEnd

-- +goose StatementBegin
create or replace function tablegate.is_anonymous() returns boolean
language sql stable
set search_path = ''
as $$
  select coalesce(nullif(current_setting('request.jwt.claims', true), '')::jsonb -> 'is_anonymous' = 'true'::jsonb, false)
$$;
-- +goose StatementEnd

-- The definitions of 00011 and 00014, restored.
-- +goose StatementBegin
create or replace function tablegate.is_full_user() returns boolean
language sql stable
set search_path = ''
as $$
  select coalesce(nullif(current_setting('request.jwt.claims', true), '')::jsonb ->> 'sub', '') <> ''
     and not tablegate.is_anonymous()
$$;
-- +goose StatementEnd

-- +goose StatementBegin
create or replace function tablegate.tenant_topic_allowed(topic text) returns boolean
language sql stable
set search_path = ''
as $$
  select coalesce(
    not tablegate.is_anonymous()
    and (topic = 'tenant:' || tablegate.current_tenant_id()::text
         or starts_with(topic, 'tenant:' || tablegate.current_tenant_id()::text || ':')),
    false)
$$;
-- +goose StatementEnd

drop function tablegate.tenant_text();
