-- Two defence-in-depth checks for the storage and realtime modules.
--
-- Storage: the insert and update policies of an opted-in bucket refuse a
-- new object name with a "." or ".." segment ('<tenant>/../<other
-- tenant>/x'). The row was the caller's folder's, but anything that
-- normalizes the key (a file backend, an S3 gateway, path.join in an
-- application) would read or overwrite another tenant's object. Names
-- stored before stay readable and deletable. Installed policies are
-- re-created.
--
-- Realtime: tablegate.broadcast_change, the change-signal trigger, sends to
-- the topic of the row's tenant. A user writer (claims with a subject, or
-- the role authenticated or anon) now signals a tenant only if the send
-- policy lets it post there itself (its active tenant; a full member's
-- with require_membership) or it is a member of that tenant; an anonymous
-- sign-in signals nothing. A table whose policies let a user write a row
-- naming a tenant it has nothing to do with no longer lets it post into
-- that tenant's topics. Writers without a user's claims (service_role, the
-- backend) are unchanged.

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
select tablegate.apply_storage_policies();

-- +goose StatementBegin
create or replace function tablegate.broadcast_change() returns trigger
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
select tablegate.apply_storage_policies();

-- +goose StatementBegin
create or replace function tablegate.broadcast_change() returns trigger
language plpgsql security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  rec jsonb;
  old_tenant text;
  new_tenant text;
  keys jsonb := '{}'::jsonb;
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
