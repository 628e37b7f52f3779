-- The demo's schema with its policies written the way the per-statement
-- helpers replace: tablegate.current_tenant_id(), is_member and
-- is_anonymous() called in the row filter, once per row. The "before" of
-- bench's policy benchmarks, and the doctor's example of per-row helpers.
--
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

drop policy if exists todos_member_read on public.todos;
create policy todos_member_read on public.todos for select to authenticated
  using (tenant_id = tablegate.current_tenant_id()
         and tablegate.is_member('tenant', tenant_id::text));

drop policy if exists todos_user_insert on public.todos;
create policy todos_user_insert on public.todos for insert to authenticated
  with check (not tablegate.is_anonymous()
              and tenant_id = tablegate.current_tenant_id()
              and tablegate.is_member('tenant', tenant_id::text)
              and owner_id = (select auth.uid()));

drop policy if exists todos_owner_update on public.todos;
create policy todos_owner_update on public.todos for update to authenticated
  using (not tablegate.is_anonymous()
         and tenant_id = tablegate.current_tenant_id()
         and owner_id = (select auth.uid()))
  with check (not tablegate.is_anonymous()
              and tenant_id = tablegate.current_tenant_id()
              and owner_id = (select auth.uid()));

drop policy if exists todos_owner_delete on public.todos;
create policy todos_owner_delete on public.todos for delete to authenticated
  using (not tablegate.is_anonymous()
         and tenant_id = tablegate.current_tenant_id()
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
