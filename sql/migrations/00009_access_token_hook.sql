-- Memberships carried in the access token.
--
-- member_tenant_id() and is_member() look for a membership in the verified
-- token's memberships claim first and probe tablegate.memberships only when
-- the claim does not hold it. A token that carries the caller's memberships
-- therefore costs a policy no table probe. These functions write that
-- claim from the table:
--
--   * tablegate.memberships_claim(user_id): the user's memberships as the
--     claim's value, [{"scope": …, "id": …, "roles": […]}, …] ordered by
--     scope and id; for a token issuer of your own.
--   * tablegate.access_token_hook(event): a Supabase custom access token
--     hook (Authentication → Hooks, or GOTRUE_HOOK_CUSTOM_ACCESS_TOKEN_URI=
--     pg-functions://postgres/tablegate/access_token_hook) that sets the
--     top-level memberships claim of every token Supabase Auth issues: the
--     memberships of the token's subject, followed by those an
--     administrator put in app_metadata.memberships (the top-level claim
--     is read first, so they are carried along, in the claim's shape); a
--     top-level claim it did not write is replaced.
--
-- The price is revocation: a membership removed from the table still admits
-- its user until the token that carries it expires. A membership added is
-- found at once (the table is still probed when the claim lacks it).
-- docs/tenant.md has the trade-off and the measured costs.
--
-- Both are SECURITY DEFINER (they read any user's memberships) with
-- search_path pinned, and are not executable by anon or authenticated.

-- +goose Up
-- +goose StatementBegin
create function tablegate.memberships_claim(user_id uuid) returns jsonb
language sql stable security definer parallel safe
set search_path = pg_catalog, pg_temp
as $$
  select coalesce(jsonb_agg(jsonb_build_object('scope', m.scope, 'id', m.scope_id, 'roles', to_jsonb(m.roles))
                            order by m.scope, m.scope_id), '[]'::jsonb)
  from tablegate.memberships m
  where m.user_id = memberships_claim.user_id
$$;
-- +goose StatementEnd
comment on function tablegate.memberships_claim(uuid) is
  'The memberships of user_id as the value of an access token''s memberships claim: [{"scope","id","roles"}], ordered by scope and id.';

-- The memberships are those of the claims' sub, the subject the policies
-- compare the table with; event.user_id is the same user for Supabase Auth.
-- A token without a uuid sub gets no memberships claim.
-- +goose StatementBegin
create function tablegate.access_token_hook(event jsonb) returns jsonb
language plpgsql stable security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  claims jsonb := event -> 'claims';
  sub text;
  ms jsonb := '[]';
begin
  if jsonb_typeof(claims) is distinct from 'object' then
    return event;
  end if;
  sub := claims ->> 'sub';
  if coalesce(tablegate.is_uuid_text(sub), false) then
    ms := tablegate.memberships_claim(sub::uuid);
  end if;
  -- Memberships an administrator put in app_metadata stay honoured: the
  -- top-level claim, read first, carries them too, in the claim's shape
  -- ({scope, id} as text, roles the array's strings, [] without), which
  -- is how the helpers read them; an entry without a scalar scope and id
  -- never matched and is left out.
  if jsonb_typeof(claims -> 'app_metadata' -> 'memberships') = 'array' then
    ms := ms || coalesce((
      select jsonb_agg(jsonb_build_object('scope', e ->> 'scope', 'id', e ->> 'id',
               'roles', case when jsonb_typeof(e -> 'roles') = 'array'
                             then coalesce((select jsonb_agg(r) from jsonb_array_elements(e -> 'roles') r
                                            where jsonb_typeof(r) = 'string'), '[]'::jsonb)
                             else '[]'::jsonb end))
      from jsonb_array_elements(claims -> 'app_metadata' -> 'memberships') e
      where jsonb_typeof(e -> 'scope') in ('string', 'number', 'boolean')
        and jsonb_typeof(e -> 'id') in ('string', 'number', 'boolean')), '[]'::jsonb);
  end if;
  claims := claims - 'memberships';
  if ms <> '[]'::jsonb then
    claims := claims || jsonb_build_object('memberships', ms);
  end if;
  return jsonb_set(event, '{claims}', claims);
end
$$;
-- +goose StatementEnd
comment on function tablegate.access_token_hook(jsonb) is
  'Supabase custom access token hook: sets the token''s memberships claim from tablegate.memberships (removed memberships admit until the token expires).';

revoke all on function tablegate.memberships_claim(uuid), tablegate.access_token_hook(jsonb) from public, anon, authenticated;
grant execute on function tablegate.memberships_claim(uuid), tablegate.access_token_hook(jsonb) to service_role;

-- Supabase Auth calls hooks as supabase_auth_admin (the dashboard grants
-- it when the hook is chosen; a self-hosted setup configured by
-- environment gets it here).
-- +goose StatementBegin
do $$
begin
  if exists (select from pg_catalog.pg_roles where rolname = 'supabase_auth_admin') then
    grant usage on schema tablegate to supabase_auth_admin;
    grant execute on function tablegate.access_token_hook(jsonb) to supabase_auth_admin;
  end if;
end
$$;
-- +goose StatementEnd

-- +goose Down
drop function tablegate.access_token_hook(jsonb);
drop function tablegate.memberships_claim(uuid);

-- +goose StatementBegin
do $$
begin
  if exists (select from pg_catalog.pg_roles where rolname = 'supabase_auth_admin') then
    revoke usage on schema tablegate from supabase_auth_admin;
  end if;
end
$$;
-- +goose StatementEnd
