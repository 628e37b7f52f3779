-- Storage buckets and realtime topics may require a membership, as
-- enable_tenant_policies(…, require_membership => true) does for tables.
--
-- Their policies compared the object's first folder, or the topic's
-- tenant, with the token's tenant claim only: a user removed from a
-- tenant's memberships kept its files and its change signals for as long
-- as their tokens named the tenant. With require_membership they compare
-- with member_tenant_id() (readers) and full_member_tenant_id() (writers,
-- and every realtime caller), once per statement. The default is unchanged.
--
--   select tablegate.enable_storage_policies('files', require_membership => true);
--   select tablegate.enable_realtime_policies(require_membership => true);
--
-- A bucket's choice is recorded with its other options; the realtime
-- choice under the setting realtime_require_membership, so that
-- enable_realtime_policies() (no argument: as recorded) keeps it when
-- Realtime is installed later.

-- +goose Up
drop function tablegate.enable_storage_policies(text, boolean, boolean);
drop function tablegate.install_storage_policies(text, boolean, boolean);

-- +goose StatementBegin
create function tablegate.install_storage_policies(bucket text, per_user boolean, anon_read boolean, require_membership boolean)
returns void
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
declare
  own text;       -- the caller's folder: readers
  own_full text;  -- the same, for full users only: writers
begin
  if require_membership then
    own := format('bucket_id = %L and (storage.foldername(name))[1] = (select tablegate.member_tenant_id())::text', bucket);
    own_full := format('bucket_id = %L and (storage.foldername(name))[1] = (select tablegate.full_member_tenant_id())::text', bucket);
  else
    own := format('bucket_id = %L and (storage.foldername(name))[1] = (select tablegate.current_tenant_id())::text', bucket);
    own_full := own || ' and not (select tablegate.is_anonymous())';
  end if;
  if per_user then
    own := own || ' and (storage.foldername(name))[2] = (select auth.uid())::text';
    own_full := own_full || ' and (storage.foldername(name))[2] = (select auth.uid())::text';
  end if;
  perform tablegate.drop_storage_policies_of(bucket);
  execute format('create policy %I on storage.objects for select to authenticated using (%s)',
    tablegate.storage_policy_name(bucket, 'select'), case when anon_read then own else own_full end);
  execute format('create policy %I on storage.objects for insert to authenticated with check (%s)',
    tablegate.storage_policy_name(bucket, 'insert'), own_full);
  execute format('create policy %I on storage.objects for update to authenticated using (%s) with check (%s)',
    tablegate.storage_policy_name(bucket, 'update'), own_full, own_full);
  execute format('create policy %I on storage.objects for delete to authenticated using (%s)',
    tablegate.storage_policy_name(bucket, 'delete'), own_full);
end
$$;
-- +goose StatementEnd

-- +goose StatementBegin
create function tablegate.enable_storage_policies(bucket text, per_user boolean default false,
  anon_read boolean default false, require_membership boolean default false)
returns boolean
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
begin
  if bucket is null or length(bucket) not between 1 and 200 or bucket ~ '[[:cntrl:]]' then
    raise exception 'bucket must be 1 to 200 printable characters' using errcode = '22023';
  end if;
  per_user := coalesce(per_user, false);
  anon_read := coalesce(anon_read, false);
  require_membership := coalesce(require_membership, false);
  insert into tablegate.settings (key, value)
  values ('storage_bucket:' || bucket, jsonb_build_object('per_user', per_user, 'anon_read', anon_read,
                                                         'require_membership', require_membership)::text)
  on conflict (key) do update set value = excluded.value;
  if to_regclass('storage.objects') is null then
    raise notice 'storage.objects does not exist (Supabase Storage is not installed): bucket % recorded; run select tablegate.apply_storage_policies() once it is', quote_literal(bucket);
    return false;
  end if;
  perform tablegate.install_storage_policies(bucket, per_user, anon_read, require_membership);
  return true;
end
$$;
-- +goose StatementEnd
comment on function tablegate.enable_storage_policies(text, boolean, boolean, boolean) is
  'Confines a storage bucket to tenant folders (and per-user folders), of tenants the caller is a member of with require_membership; anonymous sign-ins never write.';

-- +goose StatementBegin
create or replace function tablegate.apply_storage_policies() returns integer
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
declare
  r record;
  n integer := 0;
begin
  if to_regclass('storage.objects') is null then
    raise notice 'storage.objects does not exist (Supabase Storage is not installed)';
    return 0;
  end if;
  for r in select substr(s.key, length('storage_bucket:') + 1) as bucket, s.value::jsonb as v
           from tablegate.settings s where starts_with(s.key, 'storage_bucket:') order by s.key loop
    perform tablegate.install_storage_policies(r.bucket, coalesce((r.v ->> 'per_user')::boolean, false),
      coalesce((r.v ->> 'anon_read')::boolean, false), coalesce((r.v ->> 'require_membership')::boolean, false));
    n := n + 1;
  end loop;
  return n;
end
$$;
-- +goose StatementEnd

revoke all on function tablegate.install_storage_policies(text, boolean, boolean, boolean),
  tablegate.enable_storage_policies(text, boolean, boolean, boolean)
  from public, anon, authenticated, service_role;

drop function tablegate.enable_realtime_policies();

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
         then 'and pg_catalog.split_part(topic, '':'', 2) = (select tablegate.full_member_tenant_id()::text)'
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
revoke all on function tablegate.enable_realtime_policies(boolean) from public, anon, authenticated, service_role;

-- +goose Down
-- The definitions of 00013, 00018 and 00030 (pinned search path), and the
-- policies they install, restored.
-- +goose StatementBegin
do $$
begin
  if exists (select from tablegate.settings where key = 'realtime_require_membership' and value = 'true') then
    raise notice 'realtime topics no longer require a membership (the tenant claim decides)';
  end if;
end
$$;
-- +goose StatementEnd
drop function tablegate.enable_realtime_policies(boolean);
delete from tablegate.settings where key = 'realtime_require_membership';

-- +goose StatementBegin
create function tablegate.enable_realtime_policies() returns boolean
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
declare
  topic_ok constant text :=
    'extension in (''broadcast'', ''presence'') and not (select tablegate.is_anonymous()) '
    'and pg_catalog.split_part(topic, '':'', 1) = ''tenant'' '
    'and pg_catalog.split_part(topic, '':'', 2) = (select tablegate.current_tenant_id()::text)';
begin
  if to_regclass('realtime.messages') is null then
    raise notice 'realtime.messages does not exist (Supabase Realtime is not installed); run select tablegate.enable_realtime_policies() once it is';
    return false;
  end if;
  drop policy if exists tablegate_tenant_topics_receive on realtime.messages;
  drop policy if exists tablegate_tenant_topics_send on realtime.messages;
  execute format('create policy tablegate_tenant_topics_receive on realtime.messages for select to authenticated using (%s)', topic_ok);
  execute format('create policy tablegate_tenant_topics_send on realtime.messages for insert to authenticated with check (%s)', topic_ok);
  return true;
end
$$;
-- +goose StatementEnd
revoke all on function tablegate.enable_realtime_policies() from public, anon, authenticated, service_role;

drop function tablegate.enable_storage_policies(text, boolean, boolean, boolean);
drop function tablegate.install_storage_policies(text, boolean, boolean, boolean);

-- +goose StatementBegin
create function tablegate.install_storage_policies(bucket text, per_user boolean, anon_read boolean) returns void
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
declare
  own text;
  full_user constant text := 'not (select tablegate.is_anonymous())';
begin
  own := format('bucket_id = %L and (storage.foldername(name))[1] = (select tablegate.current_tenant_id())::text', bucket);
  if per_user then
    own := own || ' and (storage.foldername(name))[2] = (select auth.uid())::text';
  end if;
  perform tablegate.drop_storage_policies_of(bucket);
  execute format('create policy %I on storage.objects for select to authenticated using (%s%s)',
    tablegate.storage_policy_name(bucket, 'select'), own,
    case when anon_read then '' else ' and ' || full_user end);
  execute format('create policy %I on storage.objects for insert to authenticated with check (%s and %s)',
    tablegate.storage_policy_name(bucket, 'insert'), own, full_user);
  execute format('create policy %I on storage.objects for update to authenticated using (%s and %s) with check (%s and %s)',
    tablegate.storage_policy_name(bucket, 'update'), own, full_user, own, full_user);
  execute format('create policy %I on storage.objects for delete to authenticated using (%s and %s)',
    tablegate.storage_policy_name(bucket, 'delete'), own, full_user);
end
$$;
-- +goose StatementEnd

-- +goose StatementBegin
create function tablegate.enable_storage_policies(bucket text, per_user boolean default false, anon_read boolean default false)
returns boolean
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
begin
  if bucket is null or length(bucket) not between 1 and 200 or bucket ~ '[[:cntrl:]]' then
    raise exception 'bucket must be 1 to 200 printable characters' using errcode = '22023';
  end if;
  per_user := coalesce(per_user, false);
  anon_read := coalesce(anon_read, false);
  insert into tablegate.settings (key, value)
  values ('storage_bucket:' || bucket, jsonb_build_object('per_user', per_user, 'anon_read', anon_read)::text)
  on conflict (key) do update set value = excluded.value;
  if to_regclass('storage.objects') is null then
    raise notice 'storage.objects does not exist (Supabase Storage is not installed): bucket % recorded; run select tablegate.apply_storage_policies() once it is', quote_literal(bucket);
    return false;
  end if;
  perform tablegate.install_storage_policies(bucket, per_user, anon_read);
  return true;
end
$$;
-- +goose StatementEnd
comment on function tablegate.enable_storage_policies(text, boolean, boolean) is
  'Confines a storage bucket to tenant folders (and per-user folders); anonymous sign-ins never write.';

-- +goose StatementBegin
create or replace function tablegate.apply_storage_policies() returns integer
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
declare
  r record;
  n integer := 0;
begin
  if to_regclass('storage.objects') is null then
    raise notice 'storage.objects does not exist (Supabase Storage is not installed)';
    return 0;
  end if;
  for r in select substr(s.key, length('storage_bucket:') + 1) as bucket, s.value::jsonb as v
           from tablegate.settings s where starts_with(s.key, 'storage_bucket:') order by s.key loop
    perform tablegate.install_storage_policies(r.bucket, (r.v ->> 'per_user')::boolean, (r.v ->> 'anon_read')::boolean);
    n := n + 1;
  end loop;
  return n;
end
$$;
-- +goose StatementEnd

revoke all on function tablegate.install_storage_policies(text, boolean, boolean),
  tablegate.enable_storage_policies(text, boolean, boolean)
  from public, anon, authenticated, service_role;

-- Buckets and topics that required a membership get the claim-only
-- policies; nothing is installed where tablegate's policies were not.
-- +goose StatementBegin
do $$
declare
  r record;
begin
  if to_regclass('storage.objects') is not null then
    for r in select substr(s.key, length('storage_bucket:') + 1) as bucket, s.value::jsonb as v
             from tablegate.settings s
             where starts_with(s.key, 'storage_bucket:') and (s.value::jsonb ->> 'require_membership')::boolean loop
      if exists (select from pg_catalog.pg_policy p where p.polrelid = to_regclass('storage.objects')
                 and p.polname = tablegate.storage_policy_name(r.bucket, 'select')) then
        raise notice 'bucket % no longer requires a membership (its tenant claim decides)', quote_literal(r.bucket);
        perform tablegate.install_storage_policies(r.bucket, coalesce((r.v ->> 'per_user')::boolean, false),
          coalesce((r.v ->> 'anon_read')::boolean, false));
      end if;
    end loop;
  end if;
  if to_regclass('realtime.messages') is not null
     and exists (select from pg_catalog.pg_policy p where p.polrelid = to_regclass('realtime.messages')
                 and p.polname = 'tablegate_tenant_topics_receive') then
    perform tablegate.enable_realtime_policies();
  end if;
end
$$;
-- +goose StatementEnd
update tablegate.settings set value = (value::jsonb - 'require_membership')::text
where starts_with(key, 'storage_bucket:');
