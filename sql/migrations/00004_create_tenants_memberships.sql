-- Tenants and memberships, with RLS enabled and forced, and is_member().
--
-- A membership grants a user roles within a scope ('tenant', 'project', ...)
-- and an id within that scope. is_member() accepts either source of truth:
-- the memberships claim of the verified token (fast, as fresh as the token)
-- or the memberships table (immediate truth).

-- +goose Up
create table tablegate.tenants (
  id         uuid primary key default gen_random_uuid(),
  name       text not null check (length(name) between 1 and 200),
  created_at timestamptz not null default now()
);

create table tablegate.memberships (
  user_id    uuid not null,
  scope      text not null default 'tenant' check (length(scope) between 1 and 100),
  scope_id   text not null check (length(scope_id) between 1 and 200),
  roles      text[] not null default '{}',
  created_at timestamptz not null default now(),
  primary key (user_id, scope, scope_id)
);
create index memberships_scope_idx on tablegate.memberships (scope, scope_id);

-- is_member is true when the caller holds a membership of scope/id (with
-- role, when given), from the verified claims or the memberships table.
-- Security definer: it reads the table whatever the caller's grants, and
-- only ever for auth.uid().
create function tablegate.is_member(scope text, id text, role text default null) returns boolean
language sql stable security definer
set search_path = ''
as $$
  with me as (
    select case when s ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' then s::uuid end as uid
    from (select nullif(current_setting('request.jwt.claims', true), '')::jsonb ->> 'sub' as s) x
  )
  select exists (
    select 1 from jsonb_array_elements(tablegate.claim_array('memberships')) e
    where e ->> 'scope' = is_member.scope and e ->> 'id' = is_member.id
      and (is_member.role is null
           or (jsonb_typeof(e -> 'roles') = 'array' and (e -> 'roles') ? is_member.role))
  ) or exists (
    select 1 from tablegate.memberships m, me
    where m.user_id = me.uid
      and m.scope = is_member.scope and m.scope_id = is_member.id
      and (is_member.role is null or is_member.role = any (m.roles))
  )
$$;
grant execute on function tablegate.is_member(text, text, text) to anon, authenticated, service_role;

alter table tablegate.tenants enable row level security;
alter table tablegate.tenants force row level security;
alter table tablegate.memberships enable row level security;
alter table tablegate.memberships force row level security;

-- Members read their tenants; memberships are read by their user.
-- Writes: service_role only (it bypasses RLS).
create policy tenants_member_read on tablegate.tenants for select to authenticated
  using (tablegate.is_member('tenant', id::text));
create policy memberships_own_read on tablegate.memberships for select to authenticated
  using (user_id = (select auth.uid()));

grant select on tablegate.tenants, tablegate.memberships to authenticated;
grant all on tablegate.tenants, tablegate.memberships to service_role;

-- +goose Down
drop table tablegate.memberships;
drop table tablegate.tenants;
drop function tablegate.is_member(text, text, text);
