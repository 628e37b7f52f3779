-- Events: a transactional outbox in the tablegate schema (package events).
--
-- tablegate.events holds one row per event, written by the transaction that
-- caused it, so a rolled-back request leaves nothing and a committed one can
-- never lose its events:
--
--   * tablegate.emit_event(name, tbl, key, payload) — what events.Emit calls
--     from an action handler, in the request's own transaction;
--   * the trigger tablegate_events (function tablegate.events_row_change) on
--     tables opted in with
--
--       select tablegate.enable_events('todos');
--
--     writes <table>.created / <table>.updated / <table>.deleted for every
--     row written, inside the writing statement (no extra round trip).
--
-- Tenant and actor are read from the writer's claims inside the transaction
-- (tablegate.current_tenant_id(), the sub claim), never passed by the
-- caller. Both paths take one transaction-scoped advisory lock before taking
-- an id, so ids become visible in id order: a reader that has seen id n has
-- seen every committed id below n (resume by Last-Event-ID without gaps).
-- The price is that emitting transactions commit one after the other from
-- their first event on; emit late in a transaction.
--
-- Every emitting transaction also issues pg_notify('tablegate_events', ''),
-- delivered at commit and never on rollback; instances LISTEN on it and then
-- read the outbox. Only service_role reads and prunes the outbox; callers
-- write it only through the two SECURITY DEFINER functions.

-- +goose Up
create table tablegate.events (
  id      bigint generated always as identity primary key,
  name    text not null check (length(name) between 1 and 200),
  tbl     text not null,            -- schema-qualified table, e.g. public.todos
  key     text,                     -- the row key as text, when about a row
  tenant  uuid,                     -- the writer's active tenant
  actor   text,                     -- the writer's sub claim (null for service/anon)
  at      timestamptz not null default clock_timestamp(),
  payload jsonb,                    -- action events: the emitted payload
  image   jsonb                     -- table events: the whole row (new, or old for deletes); never sent as is
);
create index events_at_idx on tablegate.events (at);
alter table tablegate.events enable row level security;
alter table tablegate.events force row level security;
create policy events_service on tablegate.events for all to service_role using (true) with check (true);
revoke all on tablegate.events from public, anon, authenticated;
grant select, delete on tablegate.events to service_role;

-- event_horizon records the highest id pruned by retention: a Last-Event-ID
-- below it may have missed events.
create table tablegate.event_horizon (
  one     boolean primary key default true check (one),
  pruned  bigint not null default 0
);
insert into tablegate.event_horizon default values;
alter table tablegate.event_horizon enable row level security;
alter table tablegate.event_horizon force row level security;
create policy event_horizon_service on tablegate.event_horizon for all to service_role using (true) with check (true);
revoke all on tablegate.event_horizon from public, anon, authenticated;
grant select, update on tablegate.event_horizon to service_role;

-- +goose StatementBegin
create function tablegate.insert_event(p_name text, p_tbl text, p_key text, p_payload jsonb, p_image jsonb) returns bigint
language plpgsql volatile security definer
set search_path = ''
as $$
declare
  v_id bigint;
begin
  -- Serialise emitting transactions from here to their commit, so ids
  -- become visible in order (see the header).
  perform pg_advisory_xact_lock(7263102, 19);
  insert into tablegate.events (name, tbl, key, tenant, actor, payload, image)
  values (p_name, p_tbl, p_key, tablegate.current_tenant_id(),
          nullif(nullif(current_setting('request.jwt.claims', true), '')::jsonb ->> 'sub', ''),
          p_payload, p_image)
  returning id into v_id;
  perform pg_notify('tablegate_events', '');
  return v_id;
end
$$;
-- +goose StatementEnd
revoke all on function tablegate.insert_event(text, text, text, jsonb, jsonb) from public, anon, authenticated, service_role;

-- emit_event is the action path: a declared event with its payload; p_tbl
-- is the unquoted schema.table of the resource. With a key, the row's
-- current version is recorded as the image (read as the definer, never
-- sent), so visibility can be decided even after the row changes.
-- +goose StatementBegin
create function tablegate.emit_event(p_name text, p_tbl text, p_key text, p_payload jsonb) returns bigint
language plpgsql volatile security definer
set search_path = ''
as $$
declare
  v_rel regclass;
  v_pk text;
  v_image jsonb;
begin
  if p_name is null or p_name !~ '^[A-Za-z_][A-Za-z0-9_.:-]{0,199}$' then
    raise exception 'event name must be 1-200 characters of letters, digits and _ . : -' using errcode = '22023';
  end if;
  if p_payload is not null and pg_column_size(p_payload) > 65536 then
    raise exception 'event payload is larger than 64 KiB' using errcode = '22023';
  end if;
  v_rel := to_regclass(quote_ident(split_part(p_tbl, '.', 1)) || '.' || quote_ident(substr(p_tbl, length(split_part(p_tbl, '.', 1)) + 2)));
  if v_rel is null then
    raise exception 'no table %', quote_literal(p_tbl) using errcode = '42P01';
  end if;
  if p_key is not null then
    select a.attname into v_pk
    from pg_catalog.pg_index i
    join pg_catalog.pg_attribute a on a.attrelid = i.indrelid and a.attnum = i.indkey[0]
    where i.indrelid = v_rel and i.indisprimary and i.indnkeyatts = 1;
    if v_pk is not null then
      execute format('select to_jsonb(t) from %s t where %I::text = $1', v_rel, v_pk) into v_image using p_key;
    end if;
  end if;
  return tablegate.insert_event(p_name, v_rel::text, p_key, p_payload, v_image);
end
$$;
-- +goose StatementEnd
revoke all on function tablegate.emit_event(text, text, text, jsonb) from public;
grant execute on function tablegate.emit_event(text, text, text, jsonb) to anon, authenticated, service_role;

-- events_row_change is the trigger of tables opted in with enable_events.
-- tg_argv[0] is the key column, tg_argv[1] the event prefix (the table name).
-- +goose StatementBegin
create function tablegate.events_row_change() returns trigger
language plpgsql volatile security definer
set search_path = ''
as $$
declare
  r jsonb;
  verb text;
begin
  if tg_op = 'DELETE' then
    r := to_jsonb(old); verb := 'deleted';
  elsif tg_op = 'UPDATE' then
    r := to_jsonb(new); verb := 'updated';
  else
    r := to_jsonb(new); verb := 'created';
  end if;
  perform tablegate.insert_event(tg_argv[1] || '.' || verb,
    quote_ident(tg_table_schema) || '.' || quote_ident(tg_table_name),
    r ->> tg_argv[0], null, r);
  return null;
end
$$;
-- +goose StatementEnd
revoke all on function tablegate.events_row_change() from public, anon, authenticated, service_role;

-- enable_events opts a table in to <table>.created/updated/deleted events.
-- key_column defaults to the single-column primary key.
-- +goose StatementBegin
create function tablegate.enable_events(tbl regclass, key_column text default null) returns void
language plpgsql volatile
set search_path = ''
as $$
declare
  k text := key_column;
  rel text;
begin
  select c.relname into rel from pg_catalog.pg_class c where c.oid = tbl;
  if k is null then
    select a.attname into k
    from pg_catalog.pg_index i
    join pg_catalog.pg_attribute a on a.attrelid = i.indrelid and a.attnum = i.indkey[0]
    where i.indrelid = tbl and i.indisprimary and i.indnkeyatts = 1;
    if k is null then
      raise exception 'table % has no single-column primary key; pass key_column', tbl using errcode = '22023';
    end if;
  elsif not exists (select 1 from pg_catalog.pg_attribute a
                    where a.attrelid = tbl and a.attname = k and a.attnum > 0 and not a.attisdropped) then
    raise exception 'table % has no column %', tbl, quote_literal(k) using errcode = '22023';
  end if;
  execute format('drop trigger if exists tablegate_events on %s', tbl);
  execute format('create trigger tablegate_events after insert or update or delete on %s '
                 'for each row execute function tablegate.events_row_change(%L, %L)', tbl, k, rel);
end
$$;
-- +goose StatementEnd
revoke all on function tablegate.enable_events(regclass, text) from public, anon, authenticated, service_role;

-- disable_events removes the trigger again.
-- +goose StatementBegin
create function tablegate.disable_events(tbl regclass) returns void
language plpgsql volatile
set search_path = ''
as $$
begin
  execute format('drop trigger if exists tablegate_events on %s', tbl);
end
$$;
-- +goose StatementEnd
revoke all on function tablegate.disable_events(regclass) from public, anon, authenticated, service_role;

-- +goose Down
drop function if exists tablegate.disable_events(regclass);
drop function if exists tablegate.enable_events(regclass, text);
drop function if exists tablegate.events_row_change() cascade;
drop function if exists tablegate.emit_event(text, text, text, jsonb);
drop function if exists tablegate.insert_event(text, text, text, jsonb, jsonb);
drop table if exists tablegate.event_horizon;
drop table if exists tablegate.events;
