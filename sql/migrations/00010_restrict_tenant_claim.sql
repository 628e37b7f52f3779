-- Tighten tablegate.set_tenant_claim to dotted paths of string claims:
--  * not under user_metadata (users edit it themselves, so a tenant read
--    from it would let anyone pick their tenant);
--  * not a claim that is never a string: exp, iat, nbf, auth_time, aud,
--    amr, is_anonymous, app_metadata, or a path ending in roles or
--    memberships (arrays by convention);
--  * at most 8 segments of at most 63 characters.
-- Go validates the same rules (plugin.ValidateClaimPath), so a claim that Go
-- accepts is one the database accepts, and the other way round.

-- +goose Up
-- +goose StatementBegin
create or replace function tablegate.set_tenant_claim(path text) returns void
language plpgsql volatile
set search_path = ''
as $$
begin
  if path is null or path !~ '^[A-Za-z_][A-Za-z0-9_]{0,62}(\.[A-Za-z_][A-Za-z0-9_]{0,62}){0,7}$' then
    raise exception 'tenant claim must be a dotted path of identifiers, got %', coalesce(quote_literal(path), 'NULL')
      using errcode = '22023';
  end if;
  if split_part(path, '.', 1) = 'user_metadata' then
    raise exception 'tenant claim may not be read from user_metadata (users can edit it), got %', quote_literal(path)
      using errcode = '22023';
  end if;
  if path in ('exp', 'iat', 'nbf', 'auth_time', 'aud', 'amr', 'is_anonymous', 'app_metadata')
     or path ~ '(^|\.)(roles|memberships)$' then
    raise exception 'tenant claim must name a string claim, % is not one', quote_literal(path)
      using errcode = '22023';
  end if;
  insert into tablegate.settings (key, value) values ('tenant_claim', path)
  on conflict (key) do update set value = excluded.value;
end
$$;
-- +goose StatementEnd
revoke all on function tablegate.set_tenant_claim(text) from public, anon, authenticated, service_role;

-- +goose Down
-- +goose StatementBegin
create or replace function tablegate.set_tenant_claim(path text) returns void
language plpgsql volatile
set search_path = ''
as $$
begin
  if path is null or path !~ '^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$' then
    raise exception 'tenant claim must be a dotted path of identifiers, got %', coalesce(quote_literal(path), 'NULL')
      using errcode = '22023';
  end if;
  insert into tablegate.settings (key, value) values ('tenant_claim', path)
  on conflict (key) do update set value = excluded.value;
end
$$;
-- +goose StatementEnd
