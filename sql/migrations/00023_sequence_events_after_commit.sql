-- Events: order events after commit instead of serialising the writers.
--
-- 00022 drew event ids under a transaction-scoped advisory lock held from
-- the event's write to the commit, so emitting transactions committed one
-- after another (measured: 8 concurrent writers 2.6-3.7x slower than the
-- same writes without events). Now writers take no lock: their outbox rows
-- get only the internal id, and the public, gap-free position seq is drawn
-- after commit by tablegate.sequence_events, which the events hubs run
-- (one at a time, under the advisory lock) whenever they are notified:
-- it numbers every committed row that has no seq yet, in id order, and
-- commits, so a reader that has seen seq n has seen every seq below n.
-- Last-Event-ID and the SSE id are seq.
--
-- NOTIFY stays in the writing transaction (delivered at commit, never on
-- rollback): it wakes every hub, each runs sequence_events (waiting for the
-- others' turn, so it then sees their numbers) and reads. Postgres holds one database-wide lock while a
-- notifying transaction commits (including its WAL flush), so concurrent
-- emitting writes lose group commit (measured: 8 writers 2.3-4.5x slower
-- than the same writes without events; one writer 1.1x). Where write
-- throughput matters more than the last few hundred milliseconds of
-- latency, turn the writer's NOTIFY off:
--
--   alter database app set tablegate.events_notify = 'off';
--
-- and let the hubs poll (events.Config.PollInterval, e.g. 100ms).

-- The outbox is written and numbered by SECURITY DEFINER functions, i.e. as
-- the migrating role; where that role is neither superuser nor bypassrls
-- (managed Postgres), forced row-level security would refuse it. RLS stays
-- enabled: other roles still need the service_role policy.

-- +goose Up
alter table tablegate.events no force row level security;
alter table tablegate.event_horizon no force row level security;
alter table tablegate.events add column seq bigint;
create unique index events_seq_idx on tablegate.events (seq);
create index events_unsequenced_idx on tablegate.events (id) where seq is null;
create sequence tablegate.event_seq as bigint;
grant update (seq) on tablegate.events to service_role;

-- +goose StatementBegin
create or replace function tablegate.insert_event(p_name text, p_tbl text, p_key text, p_payload jsonb, p_image jsonb) returns bigint
language plpgsql volatile security definer
set search_path = ''
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

-- sequence_events numbers up to max_rows committed events without a seq,
-- in id order, and returns how many it numbered. Run it in a transaction
-- of its own: the lock that orders the runs is held until it commits.
-- +goose StatementBegin
create function tablegate.sequence_events(max_rows integer) returns integer
language plpgsql volatile security definer
set search_path = ''
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
revoke all on function tablegate.sequence_events(integer) from public, anon, authenticated;
grant execute on function tablegate.sequence_events(integer) to service_role;

-- +goose Down
revoke execute on function tablegate.sequence_events(integer) from service_role;
drop function if exists tablegate.sequence_events(integer);
-- +goose StatementBegin
create or replace function tablegate.insert_event(p_name text, p_tbl text, p_key text, p_payload jsonb, p_image jsonb) returns bigint
language plpgsql volatile security definer
set search_path = ''
as $$
declare
  v_id bigint;
begin
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
revoke update (seq) on tablegate.events from service_role;
drop sequence if exists tablegate.event_seq;
drop index if exists tablegate.events_unsequenced_idx;
drop index if exists tablegate.events_seq_idx;
alter table tablegate.events drop column if exists seq;
alter table tablegate.event_horizon force row level security;
alter table tablegate.events force row level security;
