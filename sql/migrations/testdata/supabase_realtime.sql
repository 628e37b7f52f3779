-- Test fixture: the shape of Supabase Realtime's realtime.messages and
-- realtime.topic(), written from shared/research/supabase-formats.md
-- section 5.7 (partitioned by inserted_at; here with a default partition).
create schema if not exists realtime;
grant usage on schema realtime to anon, authenticated, service_role;

create table realtime.messages (
  topic       text not null,
  extension   text not null,
  payload     jsonb,
  event       text,
  private     boolean default true,
  updated_at  timestamp not null default now(),
  inserted_at timestamp not null default now(),
  id          uuid not null default gen_random_uuid(),
  primary key (id, inserted_at)
) partition by range (inserted_at);
create table realtime.messages_default partition of realtime.messages default;
alter table realtime.messages enable row level security;
grant select, insert, update on realtime.messages to anon, authenticated, service_role;

create function realtime.topic() returns text
language sql stable as $$
  select nullif(current_setting('realtime.topic', true), '')::text
$$;
grant execute on function realtime.topic() to anon, authenticated, service_role;
