-- The storage and realtime policies read the member tenant views.
--
-- A bucket enabled with require_membership and the tenant topics of
-- Supabase Realtime with require_membership compared the caller's folder or
-- topic with "(select tablegate.member_tenant_id())::text" (readers) and
-- "(select tablegate.full_member_tenant_id())::text" (writers): a SECURITY
-- DEFINER function call per statement. They now read the views of 00037,
-- "(select id::text from tablegate.member_tenant)" and
-- "(select id::text from tablegate.full_member_tenant)", which answer the
-- same for every caller (equivalence_test.go; the views follow
-- tablegate.tenant_members, see 00037) at about 0.6 of the functions' cost
-- per call (bench/BenchmarkHelpers). The policies that are installed are
-- re-created, up and down: those of the buckets recorded with
-- require_membership, and the realtime ones with the recorded
-- require_membership. A policy an operator dropped stays dropped.
--
-- Down restores the function calls and re-creates the policies the same
-- way.

-- +goose Up
-- +goose StatementBegin
create or replace function tablegate.install_storage_policies(bucket text, per_user boolean, anon_read boolean, require_membership boolean)
returns void
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
declare
  own text;       -- the caller's folder: readers
  own_full text;  -- the same, for full users only: writers
  own_new text;   -- the same, for a name written
begin
  if require_membership then
    own := format('bucket_id = %L and (storage.foldername(name))[1] = (select id::text from tablegate.member_tenant)', bucket);
    own_full := format('bucket_id = %L and (storage.foldername(name))[1] = (select id::text from tablegate.full_member_tenant)', bucket);
  else
    own := format('bucket_id = %L and (storage.foldername(name))[1] = (select tablegate.current_tenant_id())::text', bucket);
    own_full := own || ' and not (select tablegate.is_anonymous())';
  end if;
  if per_user then
    own := own || ' and (storage.foldername(name))[2] = (select auth.uid())::text';
    own_full := own_full || ' and (storage.foldername(name))[2] = (select auth.uid())::text';
  end if;
  -- A new name has no "." or ".." segment: the row is the folder's, but
  -- a server, proxy or application that normalizes the path would reach
  -- another's. Names stored before stay readable and deletable.
  own_new := own_full || ' and not (''/'' || name || ''/'' like any (array[''%/./%'', ''%/../%'']))';
  perform tablegate.drop_storage_policies_of(bucket);
  execute format('create policy %I on storage.objects for select to authenticated using (%s)',
    tablegate.storage_policy_name(bucket, 'select'), case when anon_read then own else own_full end);
  execute format('create policy %I on storage.objects for insert to authenticated with check (%s)',
    tablegate.storage_policy_name(bucket, 'insert'), own_new);
  execute format('create policy %I on storage.objects for update to authenticated using (%s) with check (%s)',
    tablegate.storage_policy_name(bucket, 'update'), own_full, own_new);
  execute format('create policy %I on storage.objects for delete to authenticated using (%s)',
    tablegate.storage_policy_name(bucket, 'delete'), own_full);
end
$$;
-- +goose StatementEnd
-- +goose StatementBegin
create or replace function tablegate.enable_realtime_policies(require_membership boolean default null) returns boolean
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
-- +goose StatementBegin
do $$
declare
  r record;
  cmd text;
  had text[];
begin
  if to_regclass('storage.objects') is null then
    return;
  end if;
  -- The buckets recorded with require_membership: re-create those of
  -- their policies that are installed (one an operator dropped stays
  -- dropped); other buckets' policies do not change.
  for r in select substr(s.key, length('storage_bucket:') + 1) as bucket, s.value::jsonb as v
           from tablegate.settings s
           where starts_with(s.key, 'storage_bucket:')
             and coalesce((s.value::jsonb ->> 'require_membership')::boolean, false)
           order by s.key loop
    select array_agg(c) into had
    from unnest(array['select', 'insert', 'update', 'delete']) c
    where exists (select from pg_catalog.pg_policy p
                  where p.polrelid = 'storage.objects'::regclass
                    and p.polname = tablegate.storage_policy_name(r.bucket, c));
    continue when had is null;
    perform tablegate.install_storage_policies(r.bucket, coalesce((r.v ->> 'per_user')::boolean, false),
      coalesce((r.v ->> 'anon_read')::boolean, false), true);
    foreach cmd in array array['select', 'insert', 'update', 'delete'] loop
      if not cmd = any (had) then
        execute format('drop policy %I on storage.objects', tablegate.storage_policy_name(r.bucket, cmd));
      end if;
    end loop;
  end loop;
end
$$;
-- +goose StatementEnd
-- +goose StatementBegin
do $$
declare
  msgs regclass := to_regclass('realtime.messages');
  had_receive boolean;
  had_send boolean;
begin
  if msgs is null then
    return;
  end if;
  had_receive := exists (select from pg_catalog.pg_policy where polrelid = msgs and polname = 'tablegate_tenant_topics_receive');
  had_send := exists (select from pg_catalog.pg_policy where polrelid = msgs and polname = 'tablegate_tenant_topics_send');
  if had_receive or had_send then
    -- re-create the installed ones only: one an operator dropped stays dropped
    perform tablegate.enable_realtime_policies();
    if not had_receive then
      drop policy tablegate_tenant_topics_receive on realtime.messages;
    end if;
    if not had_send then
      drop policy tablegate_tenant_topics_send on realtime.messages;
    end if;
  end if;
end
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
create or replace function tablegate.install_storage_policies(bucket text, per_user boolean, anon_read boolean, require_membership boolean)
returns void
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
declare
  own text;       -- the caller's folder: readers
  own_full text;  -- the same, for full users only: writers
  own_new text;   -- the same, for a name written
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
  -- A new name has no "." or ".." segment: the row is the folder's, but
  -- a server, proxy or application that normalizes the path would reach
  -- another's. Names stored before stay readable and deletable.
  own_new := own_full || ' and not (''/'' || name || ''/'' like any (array[''%/./%'', ''%/../%'']))';
  perform tablegate.drop_storage_policies_of(bucket);
  execute format('create policy %I on storage.objects for select to authenticated using (%s)',
    tablegate.storage_policy_name(bucket, 'select'), case when anon_read then own else own_full end);
  execute format('create policy %I on storage.objects for insert to authenticated with check (%s)',
    tablegate.storage_policy_name(bucket, 'insert'), own_new);
  execute format('create policy %I on storage.objects for update to authenticated using (%s) with check (%s)',
    tablegate.storage_policy_name(bucket, 'update'), own_full, own_new);
  execute format('create policy %I on storage.objects for delete to authenticated using (%s)',
    tablegate.storage_policy_name(bucket, 'delete'), own_full);
end
$$;
-- +goose StatementEnd
-- +goose StatementBegin
create or replace function tablegate.enable_realtime_policies(require_membership boolean default null) returns boolean
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
-- +goose StatementBegin
do $$
declare
  r record;
  cmd text;
  had text[];
begin
  if to_regclass('storage.objects') is null then
    return;
  end if;
  -- The buckets recorded with require_membership: re-create those of
  -- their policies that are installed (one an operator dropped stays
  -- dropped); other buckets' policies do not change.
  for r in select substr(s.key, length('storage_bucket:') + 1) as bucket, s.value::jsonb as v
           from tablegate.settings s
           where starts_with(s.key, 'storage_bucket:')
             and coalesce((s.value::jsonb ->> 'require_membership')::boolean, false)
           order by s.key loop
    select array_agg(c) into had
    from unnest(array['select', 'insert', 'update', 'delete']) c
    where exists (select from pg_catalog.pg_policy p
                  where p.polrelid = 'storage.objects'::regclass
                    and p.polname = tablegate.storage_policy_name(r.bucket, c));
    continue when had is null;
    perform tablegate.install_storage_policies(r.bucket, coalesce((r.v ->> 'per_user')::boolean, false),
      coalesce((r.v ->> 'anon_read')::boolean, false), true);
    foreach cmd in array array['select', 'insert', 'update', 'delete'] loop
      if not cmd = any (had) then
        execute format('drop policy %I on storage.objects', tablegate.storage_policy_name(r.bucket, cmd));
      end if;
    end loop;
  end loop;
end
$$;
-- +goose StatementEnd
-- +goose StatementBegin
do $$
declare
  msgs regclass := to_regclass('realtime.messages');
  had_receive boolean;
  had_send boolean;
begin
  if msgs is null then
    return;
  end if;
  had_receive := exists (select from pg_catalog.pg_policy where polrelid = msgs and polname = 'tablegate_tenant_topics_receive');
  had_send := exists (select from pg_catalog.pg_policy where polrelid = msgs and polname = 'tablegate_tenant_topics_send');
  if had_receive or had_send then
    -- re-create the installed ones only: one an operator dropped stays dropped
    perform tablegate.enable_realtime_policies();
    if not had_receive then
      drop policy tablegate_tenant_topics_receive on realtime.messages;
    end if;
    if not had_send then
      drop policy tablegate_tenant_topics_send on realtime.messages;
    end if;
  end if;
end
$$;
-- +goose StatementEnd
