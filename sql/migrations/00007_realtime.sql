-- Realtime for tenant tables (Supabase Realtime: realtime.messages).
--
-- Tenant topics are named tenant:<tenant id> or tenant:<tenant id>:<rest>,
-- e.g. tenant:3f0c…:todos. Where realtime.messages exists, migrating
-- installs two policies on it (and tablegate.enable_realtime_policies()
-- installs them later, when Realtime arrives after tablegate):
--
--   tablegate_tenant_topics_receive  full users of the tenant receive
--                                    broadcast and presence messages of the
--                                    tenant's topics (join a private channel);
--   tablegate_tenant_topics_send     full users of the tenant send broadcast
--                                    and presence on those topics.
--
-- Anonymous sign-ins get neither: they receive no change signals. The
-- tenant is tablegate.current_tenant_id(), the one configurable claim;
-- with enable_realtime_policies(require_membership => true) (recorded
-- under the setting realtime_require_membership, so that a later call
-- without an argument keeps it) a tenant the caller is a full member of
-- (tablegate.full_member_tenant). The policies compare the topic's
-- segments with the tenant read once per statement, not once per message.
--
-- One call opts a table in to change signals:
--
--   select tablegate.enable_realtime('todos');
--
-- It adds the table to the supabase_realtime publication (creating the
-- publication when missing) and installs an AFTER row trigger that sends,
-- for every insert, update and delete, a broadcast to the row's tenant
-- topic tenant:<tenant>:<table> with event INSERT/UPDATE/DELETE and a
-- payload naming the schema, table, operation and primary key only — never
-- the row, so row policies stay the only way to read it. The trigger calls
-- realtime.send when it exists, else inserts into realtime.messages, else
-- does nothing (Realtime may be installed later).
--
-- A table is opted in when it carries the trigger tablegate_broadcast_change
-- (function tablegate.broadcast_change); the trigger's comment records
-- whether enable_realtime added the table to the publication
-- ('tablegate: added to supabase_realtime'), so that disable_realtime only
-- removes what it added.

-- +goose Up
-- tenant_topic_allowed is true when topic is a topic of the caller's active
-- tenant and the caller is not an anonymous sign-in.
-- +goose StatementBegin
create function tablegate.tenant_topic_allowed(topic text) returns boolean
language sql stable parallel safe
as $$
  select coalesce(
    not tablegate.is_anonymous()
    and pg_catalog.split_part(topic, ':', 1) operator(pg_catalog.=) 'tenant'
    and pg_catalog.split_part(topic, ':', 2) operator(pg_catalog.=) tablegate.current_tenant_id()::pg_catalog.text,
    false)
$$;
-- +goose StatementEnd

-- +goose StatementBegin
create function tablegate.enable_realtime_policies(require_membership boolean default null) returns boolean
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
declare
  membership boolean := require_membership;
  topic_ok text;
begin
  if membership is null then
    membership := coalesce((select s.value::boolean from tablegate.settings s
                            where s.key = 'realtime_require_membership'), false);
  else
    insert into tablegate.settings (key, value) values ('realtime_require_membership', membership::text)
    on conflict (key) do update set value = excluded.value;
  end if;
  if to_regclass('realtime.messages') is null then
    raise notice 'realtime.messages does not exist (Supabase Realtime is not installed); run select tablegate.enable_realtime_policies() once it is';
    return false;
  end if;
  topic_ok := 'extension in (''broadcast'', ''presence'') and pg_catalog.split_part(topic, '':'', 1) = ''tenant'' '
    || case when membership
         then 'and pg_catalog.split_part(topic, '':'', 2) = (select id::text from tablegate.full_member_tenant)'
         else 'and not (select tablegate.is_anonymous()) '
              'and pg_catalog.split_part(topic, '':'', 2) = (select tablegate.current_tenant_id()::text)' end;
  drop policy if exists tablegate_tenant_topics_receive on realtime.messages;
  drop policy if exists tablegate_tenant_topics_send on realtime.messages;
  execute format('create policy tablegate_tenant_topics_receive on realtime.messages for select to authenticated using (%s)', topic_ok);
  execute format('create policy tablegate_tenant_topics_send on realtime.messages for insert to authenticated with check (%s)', topic_ok);
  return true;
end
$$;
-- +goose StatementEnd
comment on function tablegate.enable_realtime_policies(boolean) is
  'Installs the tenant-topic policies on realtime.messages; require_membership (recorded; NULL: as recorded) requires a membership of the topic''s tenant.';

-- broadcast_change is the trigger of tables opted in with enable_realtime.
-- TG_ARGV[0] is the tenant column, TG_ARGV[1..] the primary key columns.
-- Security definer: the signal goes out whatever the writer may do on
-- realtime.messages.
-- +goose StatementBegin
create function tablegate.broadcast_change() returns trigger
language plpgsql security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  rec jsonb;
  old_tenant text;
  new_tenant text;
  keys jsonb := '{}'::jsonb;
  writer_tenant text;
  i int;
  payload jsonb;
begin
  if tg_op in ('INSERT', 'UPDATE') then
    rec := to_jsonb(new);
    new_tenant := rec ->> tg_argv[0];
  end if;
  if tg_op in ('UPDATE', 'DELETE') then
    old_tenant := to_jsonb(old) ->> tg_argv[0];
    if rec is null then
      rec := to_jsonb(old);
    end if;
  end if;
  for i in 1 .. tg_nargs - 1 loop
    keys := keys || jsonb_build_object(tg_argv[i], rec -> tg_argv[i]);
  end loop;
  -- A user writer (its claims name a subject, or the role authenticated
  -- or anon) signals a tenant's topics only if the send policy lets it
  -- post there itself (its active tenant; a full member's with
  -- require_membership), or if it is a member of that tenant: a table
  -- whose policies let it write a row naming a tenant it has nothing to do
  -- with must not let it post there. An anonymous sign-in signals nothing.
  -- Writers without a user's claims (service_role, the backend,
  -- migrations) signal any tenant.
  if tablegate.claim_text('sub') is not null or tablegate.claim_text('role') in ('authenticated', 'anon') then
    if tablegate.is_anonymous() then
      new_tenant := null;
      old_tenant := null;
    else
      if coalesce((select st.value = 'true' from tablegate.settings st where st.key = 'realtime_require_membership'), false) then
        writer_tenant := tablegate.full_member_tenant_id()::text;
      else
        writer_tenant := tablegate.current_tenant_id()::text;
      end if;
      if new_tenant is distinct from writer_tenant and not coalesce(tablegate.is_member('tenant', new_tenant), false) then
        new_tenant := null;
      end if;
      if old_tenant is distinct from writer_tenant and not coalesce(tablegate.is_member('tenant', old_tenant), false) then
        old_tenant := null;
      end if;
    end if;
  end if;
  payload := jsonb_build_object('schema', tg_table_schema, 'table', tg_table_name,
                                'operation', tg_op, 'keys', keys);
  if new_tenant is not null then
    perform tablegate.send_signal(payload, tg_op, 'tenant:' || new_tenant || ':' || tg_table_name);
  end if;
  -- an update that moves a row to another tenant signals the old one too
  if old_tenant is not null and old_tenant is distinct from new_tenant then
    perform tablegate.send_signal(payload, tg_op, 'tenant:' || old_tenant || ':' || tg_table_name);
  end if;
  return null;
end
$$;
-- +goose StatementEnd

-- send_signal sends one private broadcast through realtime.send, else
-- realtime.messages, else nowhere.
-- +goose StatementBegin
create function tablegate.send_signal(payload jsonb, event text, topic text) returns void
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
begin
  if to_regprocedure('realtime.send(jsonb, text, text, boolean)') is not null then
    execute 'select realtime.send($1, $2, $3, true)' using payload, event, topic;
  elsif to_regclass('realtime.messages') is not null then
    execute 'insert into realtime.messages (topic, extension, event, payload, private) values ($1, ''broadcast'', $2, $3, true)'
      using topic, event, payload;
  end if;
end
$$;
-- +goose StatementEnd

-- enable_realtime opts a table in: publication supabase_realtime and the
-- broadcast trigger to tenant topics.
-- +goose StatementBegin
create function tablegate.enable_realtime(tbl regclass, tenant_column name default 'tenant_id') returns void
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
declare
  pk name[];
  added boolean := false;
  was_added boolean;
begin
  if not exists (select 1 from pg_catalog.pg_attribute a
                 where a.attrelid = tbl and a.attname = tenant_column and a.attnum > 0 and not a.attisdropped) then
    raise exception 'table % has no column %', tbl, quote_ident(tenant_column) using errcode = '42703';
  end if;
  select array_agg(a.attname order by k.ord) into pk
  from pg_catalog.pg_index i
  cross join lateral unnest(i.indkey::int2[]) with ordinality k(attnum, ord)
  join pg_catalog.pg_attribute a on a.attrelid = i.indrelid and a.attnum = k.attnum
  where i.indrelid = tbl and i.indisprimary;
  if pk is null then
    raise exception 'table % needs a primary key for change signals', tbl using errcode = '42P16';
  end if;
  if not exists (select 1 from pg_catalog.pg_publication where pubname = 'supabase_realtime') then
    create publication supabase_realtime;
    -- remembered so that migrating down drops it again (when left empty)
    insert into tablegate.settings (key, value) values ('realtime_publication_created', 'true')
    on conflict (key) do nothing;
  end if;
  if not exists (select 1 from pg_catalog.pg_publication_rel pr
                 join pg_catalog.pg_publication p on p.oid = pr.prpubid
                 where p.pubname = 'supabase_realtime' and pr.prrelid = tbl)
     and not exists (select 1 from pg_catalog.pg_publication where pubname = 'supabase_realtime' and puballtables) then
    execute format('alter publication supabase_realtime add table %s', tbl);
    added := true;
  end if;
  select coalesce(obj_description(t.oid, 'pg_trigger') = 'tablegate: added to supabase_realtime', false)
    into was_added
  from pg_catalog.pg_trigger t where t.tgrelid = tbl and t.tgname = 'tablegate_broadcast_change';
  execute format('drop trigger if exists tablegate_broadcast_change on %s', tbl);
  execute format('create trigger tablegate_broadcast_change after insert or update or delete on %s '
                 'for each row execute function tablegate.broadcast_change(%s)',
                 tbl, (select string_agg(quote_literal(c), ', ') from unnest(array[tenant_column] || pk) c));
  execute format('comment on trigger tablegate_broadcast_change on %s is %L', tbl,
                 case when added or was_added then 'tablegate: added to supabase_realtime' else 'tablegate' end);
end
$$;
-- +goose StatementEnd
comment on function tablegate.enable_realtime(regclass, name) is
  'Adds a table to publication supabase_realtime and broadcasts change signals to tenant:<tenant>:<table>.';
-- disable_realtime removes the trigger and, when enable_realtime added it,
-- the table from the publication.
-- +goose StatementBegin
create function tablegate.disable_realtime(tbl regclass) returns void
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
declare
  added boolean;
begin
  select coalesce(obj_description(t.oid, 'pg_trigger') = 'tablegate: added to supabase_realtime', false)
    into added
  from pg_catalog.pg_trigger t where t.tgrelid = tbl and t.tgname = 'tablegate_broadcast_change';
  execute format('drop trigger if exists tablegate_broadcast_change on %s', tbl);
  if added and exists (
       select 1 from pg_catalog.pg_publication_rel pr
       join pg_catalog.pg_publication p on p.oid = pr.prpubid
       where p.pubname = 'supabase_realtime' and pr.prrelid = tbl) then
    execute format('alter publication supabase_realtime drop table %s', tbl);
  end if;
end
$$;
-- +goose StatementEnd

grant execute on function tablegate.tenant_topic_allowed(text) to anon, authenticated, service_role;
revoke all on function tablegate.enable_realtime_policies(boolean), tablegate.broadcast_change(),
  tablegate.send_signal(jsonb, text, text), tablegate.enable_realtime(regclass, name),
  tablegate.disable_realtime(regclass)
  from public, anon, authenticated, service_role;

select tablegate.enable_realtime_policies();

-- +goose Down
-- +goose StatementBegin
do $$
declare
  r record;
begin
  for r in select t.tgrelid::regclass as tbl from pg_trigger t
           where t.tgname = 'tablegate_broadcast_change' and t.tgfoid = 'tablegate.broadcast_change()'::regprocedure loop
    perform tablegate.disable_realtime(r.tbl);
  end loop;
  if exists (select 1 from tablegate.settings where key = 'realtime_publication_created')
     and exists (select 1 from pg_publication p where p.pubname = 'supabase_realtime' and not p.puballtables
                 and not exists (select 1 from pg_publication_rel pr where pr.prpubid = p.oid)) then
    drop publication supabase_realtime;
  end if;
  delete from tablegate.settings where key in ('realtime_publication_created', 'realtime_require_membership');
  if to_regclass('realtime.messages') is not null then
    drop policy if exists tablegate_tenant_topics_receive on realtime.messages;
    drop policy if exists tablegate_tenant_topics_send on realtime.messages;
  end if;
end
$$;
-- +goose StatementEnd
drop function tablegate.disable_realtime(regclass);
drop function tablegate.enable_realtime(regclass, name);
drop function tablegate.send_signal(jsonb, text, text);
drop function tablegate.broadcast_change();
drop function tablegate.enable_realtime_policies(boolean);
drop function tablegate.tenant_topic_allowed(text);
