-- Events: a transactional outbox in the tablegate schema (package events).
--
-- tablegate.events holds one row per event, written by the transaction that
-- caused it, so a rolled-back request leaves nothing and a committed one can
-- never lose its events:
--
--   * tablegate.emit_event(name, tbl, key, payload) — what events.Emit calls
--     from an action handler, in the request's own transaction, switched
--     to service_role for that one statement (anon and authenticated may
--     not execute it: with a SQL path of their own they could forge
--     events). It refuses table events (<prefix>.created, .updated,
--     .deleted of a table whose prefix is its name or the prefix of its
--     tablegate_events trigger), and reads a row image only from a table
--     service_role may read itself (42501 otherwise), through the primary
--     key's index;
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
-- caller. An action event without a key reaches the subscribers of the
-- writer's active tenant, so tablegate.insert_event refuses (42501) one
-- from a writer whose tenant claim names a tenant it is not a member of;
-- row events carry the row's image and each subscriber's own policies
-- decide those.
--
-- Writers take no lock: their rows get only the internal id, and the
-- public, gap-free position seq is drawn after commit by
-- tablegate.sequence_events, which the events hubs run (one at a time,
-- under an advisory lock) whenever they are notified: it numbers every
-- committed row that has no seq yet, in id order, so a reader that has
-- seen seq n has seen every seq below n. Last-Event-ID and the SSE id are
-- seq. Every emitting transaction issues pg_notify('tablegate_events', ''),
-- delivered at commit and never on rollback. Postgres holds one
-- database-wide lock while a notifying transaction commits, so concurrent
-- emitting writes lose group commit; where write throughput matters more
-- than the last few hundred milliseconds of latency, turn it off and let
-- the hubs poll (events.Config.PollInterval):
--
--   alter database app set tablegate.events_notify = 'off';
--
-- Only service_role reads and prunes the outbox; callers write it only
-- through the SECURITY DEFINER functions. Those run as the migrating role;
-- where that role is neither superuser nor bypassrls (managed Postgres),
-- forced row-level security would refuse it, so RLS is enabled, not forced.

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
  image   jsonb,                    -- table events: the whole row (new, or old for deletes); never sent as is
  seq     bigint                    -- the public position, drawn after commit by sequence_events
);
create index events_at_idx on tablegate.events (at);
create unique index events_seq_idx on tablegate.events (seq);
create index events_unsequenced_idx on tablegate.events (id) where seq is null;
create sequence tablegate.event_seq as bigint;
alter table tablegate.events enable row level security;
create policy events_service on tablegate.events for all to service_role using (true) with check (true);
revoke all on tablegate.events from public, anon, authenticated;
grant select, delete on tablegate.events to service_role;
grant update (seq) on tablegate.events to service_role;

-- event_horizon records the highest id pruned by retention: a Last-Event-ID
-- below it may have missed events.
create table tablegate.event_horizon (
  one     boolean primary key default true check (one),
  pruned  bigint not null default 0
);
insert into tablegate.event_horizon default values;
alter table tablegate.event_horizon enable row level security;
create policy event_horizon_service on tablegate.event_horizon for all to service_role using (true) with check (true);
revoke all on tablegate.event_horizon from public, anon, authenticated;
grant select, update on tablegate.event_horizon to service_role;

-- +goose StatementBegin
create function tablegate.insert_event(p_name text, p_tbl text, p_key text, p_payload jsonb, p_image jsonb) returns bigint
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

-- +goose StatementBegin
create function tablegate.emit_event(p_name text, p_tbl text, p_key text, p_payload jsonb) returns bigint
language plpgsql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  v_rel regclass;
  v_pk text;
  v_pktype text;
  v_opns text;
  v_image jsonb;
  v_prefix text;
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
  -- Table events come only from the table's trigger.
  if p_name ~ '\.(created|updated|deleted)$' then
    v_prefix := regexp_replace(p_name, '\.(created|updated|deleted)$', '');
    if v_prefix = (select c.relname::text from pg_catalog.pg_class c where c.oid = v_rel)
       or exists (select 1 from pg_catalog.pg_trigger t
                  where t.tgrelid = v_rel and t.tgname = 'tablegate_events'
                    and split_part(encode(t.tgargs, 'escape'), '\000', 2) = v_prefix) then
      raise exception 'event % is a table event of %: only its trigger writes it', quote_literal(p_name), v_rel
        using errcode = '42501';
    end if;
  end if;
  if p_key is not null then
    -- The row image is read with the owner's rights: only from a table
    -- that service_role, the one API role that may call this, may read.
    if not (pg_catalog.has_schema_privilege('service_role',
              (select c.relnamespace from pg_catalog.pg_class c where c.oid = v_rel), 'USAGE')
            and pg_catalog.has_table_privilege('service_role', v_rel, 'SELECT')) then
      raise exception 'service_role may not read %: no event image', v_rel using errcode = '42501';
    end if;
    select a.attname into v_pk
    from pg_catalog.pg_index i
    join pg_catalog.pg_attribute a on a.attrelid = i.indrelid and a.attnum = i.indkey[0]
    where i.indrelid = v_rel and i.indisprimary and i.indnkeyatts = 1;
    if v_pk is not null then
      -- The key's base type without its modifier (a cast to varchar(5) or
      -- numeric(6,2) would round or cut the key), and the equality
      -- operator of the primary key's operator class (an extension
      -- type's, which this search_path does not see), so that the index
      -- serves the lookup; the text comparison keeps the match exact.
      select pg_catalog.format_type(case when ty.typtype = 'd' then ty.typbasetype else a.atttypid end, -1),
             pg_catalog.quote_ident(n.nspname)
        into v_pktype, v_opns
      from pg_catalog.pg_index i
      join pg_catalog.pg_attribute a on a.attrelid = i.indrelid and a.attnum = i.indkey[0]
      join pg_catalog.pg_type ty on ty.oid = a.atttypid
      join pg_catalog.pg_opclass oc on oc.oid = i.indclass[0]
      join pg_catalog.pg_amop ao on ao.amopfamily = oc.opcfamily and ao.amopstrategy = 3
        and ao.amoplefttype = oc.opcintype and ao.amoprighttype = oc.opcintype
      join pg_catalog.pg_operator o on o.oid = ao.amopopr
      join pg_catalog.pg_namespace n on n.oid = o.oprnamespace
      where i.indrelid = v_rel and i.indisprimary;
      if v_pktype is not null then
        begin
          execute format('select to_jsonb(t) from %s t where %I operator(%s.=) $1::%s and %I::text = $1',
            v_rel, v_pk, v_opns, v_pktype, v_pk) into v_image using p_key;
        exception when others then
          -- The key does not cast (not a number, a domain's check, an
          -- extension type's syntax): no row has it, as the text
          -- comparison below would find. A cancellation is not caught.
          v_image := null;
        end;
      else
        execute format('select to_jsonb(t) from %s t where %I::text = $1', v_rel, v_pk) into v_image using p_key;
      end if;
    end if;
  end if;
  return tablegate.insert_event(p_name, v_rel::text, p_key, p_payload, v_image);
end
$$;
-- +goose StatementEnd

-- events_row_change is the trigger of tables opted in with enable_events.
-- tg_argv[0] is the key column, tg_argv[1] the event prefix (the table name).
-- +goose StatementBegin
create function tablegate.events_row_change() returns trigger
language plpgsql volatile security definer
set search_path = pg_catalog, pg_temp
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

-- enable_events opts a table in to <table>.created/updated/deleted events.
-- key_column defaults to the single-column primary key.
-- +goose StatementBegin
create function tablegate.enable_events(tbl regclass, key_column text default null) returns void
language plpgsql volatile
set search_path = pg_catalog, pg_temp
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

-- disable_events removes the trigger again.
-- +goose StatementBegin
create function tablegate.disable_events(tbl regclass) returns void
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
begin
  execute format('drop trigger if exists tablegate_events on %s', tbl);
end
$$;
-- +goose StatementEnd

-- sequence_events numbers up to max_rows committed events without a seq,
-- in id order, and returns how many it numbered. Run it in a transaction
-- of its own: the lock that orders the runs is held until it commits.
-- +goose StatementBegin
create function tablegate.sequence_events(max_rows integer) returns integer
language plpgsql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  n integer;
begin
  perform pg_advisory_xact_lock(7263102, 19);
  with todo as (
    select id from tablegate.events where seq is null order by id limit max_rows for update
  ), numbered as (
    select id, nextval('tablegate.event_seq') as seq from todo
  )
  update tablegate.events e set seq = numbered.seq from numbered where e.id = numbered.id;
  get diagnostics n = row_count;
  return n;
end
$$;
-- +goose StatementEnd

revoke all on function tablegate.insert_event(text, text, text, jsonb, jsonb), tablegate.events_row_change(),
  tablegate.enable_events(regclass, text), tablegate.disable_events(regclass)
  from public, anon, authenticated, service_role;
revoke all on function tablegate.emit_event(text, text, text, jsonb), tablegate.sequence_events(integer)
  from public, anon, authenticated;
grant execute on function tablegate.emit_event(text, text, text, jsonb), tablegate.sequence_events(integer)
  to service_role;

-- +goose Down
drop function tablegate.sequence_events(integer);
drop function tablegate.disable_events(regclass);
drop function tablegate.enable_events(regclass, text);
drop function tablegate.events_row_change() cascade;
drop function tablegate.emit_event(text, text, text, jsonb);
drop function tablegate.insert_event(text, text, text, jsonb, jsonb);
drop sequence tablegate.event_seq;
drop table tablegate.event_horizon;
drop table tablegate.events;
