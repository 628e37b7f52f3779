-- Storage policies for Supabase Storage (storage.objects). A bucket is opted
-- in with one call, at any time (also when Storage is installed after
-- tablegate was migrated):
--
--   select tablegate.enable_storage_policies('files');                      -- <tenant>/...
--   select tablegate.enable_storage_policies('avatars', per_user => true);  -- <tenant>/<user>/...
--   select tablegate.enable_storage_policies('files', require_membership => true);
--
-- Objects of the bucket are then confined to the caller's tenant folder:
-- the first path segment must be tablegate.current_tenant_id() (the one
-- configurable tenant claim); with require_membership, a tenant the caller
-- is a member of (tablegate.member_tenant for readers,
-- tablegate.full_member_tenant for writers, once per statement), so that a
-- user removed from a tenant's memberships loses its files at once; with
-- per_user the second segment must be the caller's user id. Anonymous
-- sign-ins never upload, overwrite or delete, and read only when anon_read
-- is true. A new name never has a "." or ".." segment. Callers without a
-- session (anon) get nothing; service_role bypasses row-level security.
--
-- Opted-in buckets are recorded in tablegate.settings under the key
-- 'storage_bucket:<bucket>' with the value {"per_user": …, "anon_read": …,
-- "require_membership": …}. Where storage.objects does not exist,
-- enable_storage_policies records the bucket, installs nothing, raises a
-- notice and returns false; once Storage is installed,
-- tablegate.apply_storage_policies() installs every recorded bucket. The
-- policies are named tablegate_storage:<bucket>:<command>.

-- +goose Up
-- storage_policy_name names the policy of one bucket and command, within
-- Postgres' 63-byte identifier limit (long bucket ids use a hash).
-- +goose StatementBegin
create function tablegate.storage_policy_name(bucket text, cmd text) returns text
language sql immutable
set search_path = pg_catalog, pg_temp
as $$
  select case
    when octet_length('tablegate_storage:' || bucket || ':' || cmd) <= 63
      then 'tablegate_storage:' || bucket || ':' || cmd
    else 'tablegate_storage:' || left(md5(bucket), 24) || ':' || cmd
  end
$$;
-- +goose StatementEnd

-- drop_storage_policies_of drops the policies of one bucket, where present.
-- +goose StatementBegin
create function tablegate.drop_storage_policies_of(bucket text) returns void
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
declare
  cmd text;
begin
  if to_regclass('storage.objects') is null then
    return;
  end if;
  foreach cmd in array array['select', 'insert', 'update', 'delete'] loop
    execute format('drop policy if exists %I on storage.objects', tablegate.storage_policy_name(bucket, cmd));
  end loop;
end
$$;
-- +goose StatementEnd

-- install_storage_policies installs the policies of one recorded bucket.
-- +goose StatementBegin
create function tablegate.install_storage_policies(bucket text, per_user boolean, anon_read boolean, require_membership boolean)
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

-- enable_storage_policies records a bucket and installs its policies where
-- storage.objects exists (returns true), else only records it (false).
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

-- apply_storage_policies installs the policies of every recorded bucket
-- (after Supabase Storage was installed); returns the number of buckets.
-- +goose StatementBegin
create function tablegate.apply_storage_policies() returns integer
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

-- disable_storage_policies drops a bucket's policies and forgets it.
-- +goose StatementBegin
create function tablegate.disable_storage_policies(bucket text) returns void
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
begin
  perform tablegate.drop_storage_policies_of(bucket);
  delete from tablegate.settings s where s.key = 'storage_bucket:' || bucket;
end
$$;
-- +goose StatementEnd

revoke all on function tablegate.storage_policy_name(text, text), tablegate.drop_storage_policies_of(text),
  tablegate.install_storage_policies(text, boolean, boolean, boolean),
  tablegate.enable_storage_policies(text, boolean, boolean, boolean), tablegate.apply_storage_policies(),
  tablegate.disable_storage_policies(text)
  from public, anon, authenticated, service_role;

-- +goose Down
-- +goose StatementBegin
do $$
declare
  b text;
begin
  for b in select substr(key, length('storage_bucket:') + 1) from tablegate.settings
           where starts_with(key, 'storage_bucket:') loop
    perform tablegate.drop_storage_policies_of(b);
  end loop;
  delete from tablegate.settings where starts_with(key, 'storage_bucket:');
end
$$;
-- +goose StatementEnd
drop function tablegate.disable_storage_policies(text);
drop function tablegate.apply_storage_policies();
drop function tablegate.enable_storage_policies(text, boolean, boolean, boolean);
drop function tablegate.install_storage_policies(text, boolean, boolean, boolean);
drop function tablegate.drop_storage_policies_of(text);
drop function tablegate.storage_policy_name(text, text);
