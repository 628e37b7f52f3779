-- The schema of "tablegate demo", applied after tablegate's migrations.
-- Re-runnable: a second run leaves an existing demo in place.
--
-- Two tenants, members of each, and public.todos whose rows belong to a
-- tenant and an owner. Row-level security is the gate:
--   * members of the row's tenant read it (full users and anonymous sign-ins);
--   * only full users (not tablegate.is_anonymous()) insert, update and
--     delete, and update/delete only their own rows;
--   * anon (no session) sees nothing.
-- The active tenant comes from the token (claim tenant_id, read by
-- tablegate.current_tenant_id()) and must be one the user is a member of.

insert into tablegate.tenants (id, name) values
  ('a0000000-0000-4000-8000-00000000000a', 'Tenant A'),
  ('b0000000-0000-4000-8000-00000000000b', 'Tenant B')
on conflict (id) do nothing;

insert into tablegate.memberships (user_id, scope, scope_id, roles) values
  ('11111111-1111-4111-8111-111111111111', 'tenant', 'a0000000-0000-4000-8000-00000000000a', '{member}'),
  ('22222222-2222-4222-8222-222222222222', 'tenant', 'a0000000-0000-4000-8000-00000000000a', '{member,admin}'),
  ('33333333-3333-4333-8333-333333333333', 'tenant', 'a0000000-0000-4000-8000-00000000000a', '{member,approver}'),
  ('44444444-4444-4444-8444-444444444444', 'tenant', 'a0000000-0000-4000-8000-00000000000a', '{guest}'),
  ('55555555-5555-4555-8555-555555555555', 'tenant', 'b0000000-0000-4000-8000-00000000000b', '{member}')
on conflict do nothing;

create table if not exists public.todos (
  id         bigint generated always as identity primary key,
  tenant_id  uuid not null default tablegate.current_tenant_id() references tablegate.tenants (id),
  owner_id   uuid not null default auth.uid(),
  title      text not null check (length(title) between 1 and 200),
  done       boolean not null default false,
  created_at timestamptz not null default now()
);
create index if not exists todos_tenant_idx on public.todos (tenant_id, id);

alter table public.todos enable row level security;
alter table public.todos force row level security;

-- Every check sits in a sub-select, "(select ...)": Postgres evaluates it
-- once per statement (an init-plan), not once per row, and the tenant
-- comparison can use todos_tenant_idx. tablegate.member_tenant is the
-- caller's active tenant when the caller is a member of it (the memberships
-- claim, or one index probe of the memberships table), no row otherwise;
-- tablegate.full_member_tenant the same for full users only (no row for an
-- anonymous sign-in). Being views, they cost a policy about what an owner
-- check costs. See docs/tenant.md for these patterns and what each costs.
drop policy if exists todos_member_read on public.todos;
create policy todos_member_read on public.todos for select to authenticated
  using (tenant_id = (select id from tablegate.member_tenant));

drop policy if exists todos_user_insert on public.todos;
create policy todos_user_insert on public.todos for insert to authenticated
  with check (tenant_id = (select id from tablegate.full_member_tenant)
              and owner_id = (select auth.uid()));

-- Writes, like the insert, need a full member of the row's tenant: a user
-- removed from the tenant cannot change their old rows there with a token
-- issued before (reads are refused by todos_member_read already; an update
-- without WHERE never reads).
drop policy if exists todos_owner_update on public.todos;
create policy todos_owner_update on public.todos for update to authenticated
  using (tenant_id = (select id from tablegate.full_member_tenant)
         and owner_id = (select auth.uid()))
  with check (tenant_id = (select id from tablegate.full_member_tenant)
              and owner_id = (select auth.uid()));

drop policy if exists todos_owner_delete on public.todos;
create policy todos_owner_delete on public.todos for delete to authenticated
  using (tenant_id = (select id from tablegate.full_member_tenant)
         and owner_id = (select auth.uid()));

-- Grants open the door; the policies above decide. anon gets select so that a
-- caller without a session reads an empty table instead of an error.
grant select on public.todos to anon;
grant select, insert, update, delete on public.todos to authenticated;
grant all on public.todos to service_role;

-- Seed a few rows per tenant, once.
insert into public.todos (tenant_id, owner_id, title, done)
select * from (values
  ('a0000000-0000-4000-8000-00000000000a'::uuid, '11111111-1111-4111-8111-111111111111'::uuid, 'Write the onboarding guide', false),
  ('a0000000-0000-4000-8000-00000000000a'::uuid, '11111111-1111-4111-8111-111111111111'::uuid, 'Review the RLS policies', true),
  ('a0000000-0000-4000-8000-00000000000a'::uuid, '22222222-2222-4222-8222-222222222222'::uuid, 'Rotate the signing keys', false),
  ('b0000000-0000-4000-8000-00000000000b'::uuid, '55555555-5555-4555-8555-555555555555'::uuid, 'Tenant B: plan the launch', false),
  ('b0000000-0000-4000-8000-00000000000b'::uuid, '55555555-5555-4555-8555-555555555555'::uuid, 'Tenant B: invoice customers', true)
) as seed (tenant_id, owner_id, title, done)
where not exists (select 1 from public.todos);

-- Live events: todos.created/updated/deleted for every row written (the
-- events package serves them at /api/todos/events, filtered by each
-- subscriber's own RLS).
select tablegate.enable_events('public.todos');
