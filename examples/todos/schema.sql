-- The example's table: todos per tenant, owned by their creator.
-- Applied on top of tablegate's migrations (roles, auth.uid(),
-- tablegate.current_tenant_id(), tablegate.is_anonymous()).
create table public.todos (
  id         uuid primary key default gen_random_uuid(),
  tenant_id  uuid not null default tablegate.current_tenant_id(),
  owner_id   uuid not null default auth.uid(),
  title      text not null check (length(title) between 1 and 200),
  done       boolean not null default false,
  created_at timestamptz not null default now()
);

alter table public.todos enable row level security;
grant select, insert, update, delete on public.todos to authenticated;

-- Members of the active tenant see its todos; guests (anonymous sign-ins)
-- see nothing and write nothing.
create policy todos_read on public.todos for select to authenticated
  using (tenant_id = tablegate.current_tenant_id() and not tablegate.is_anonymous());
create policy todos_write on public.todos for insert to authenticated
  with check (tenant_id = tablegate.current_tenant_id() and owner_id = auth.uid() and not tablegate.is_anonymous());
create policy todos_update on public.todos for update to authenticated
  using (tenant_id = tablegate.current_tenant_id() and not tablegate.is_anonymous())
  with check (tenant_id = tablegate.current_tenant_id());
create policy todos_delete on public.todos for delete to authenticated
  using (tenant_id = tablegate.current_tenant_id() and owner_id = auth.uid());
