-- Written by "tablegate init": a sample table served by tablegate. Apply it
-- after tablegate's own migrations:
--   tablegate migrate up && tablegate migrate up --dir db/migrations
--
-- Every row belongs to the user who created it. Row-level security is
-- enabled and forced, so it is the only gate, whoever connects:
--   * a signed-in user reads, changes and deletes only their own rows;
--   * anonymous sign-ins may read their own rows but never write;
--   * callers without a session get no grant at all.
-- Copy this file to add your own tables (next number: 00002_...).

-- +goose Up
create table public.todos (
  id         bigint generated always as identity primary key,
  owner_id   uuid not null default auth.uid(),
  title      text not null check (length(title) between 1 and 200),
  done       boolean not null default false,
  created_at timestamptz not null default now()
);
create index todos_owner_idx on public.todos (owner_id, id);

alter table public.todos enable row level security;
alter table public.todos force row level security;

create policy todos_owner_read on public.todos for select to authenticated
  using (owner_id = (select auth.uid()));
create policy todos_owner_insert on public.todos for insert to authenticated
  with check (owner_id = (select auth.uid()) and not (select tablegate.is_anonymous()));
create policy todos_owner_update on public.todos for update to authenticated
  using (owner_id = (select auth.uid()) and not (select tablegate.is_anonymous()))
  with check (owner_id = (select auth.uid()));
create policy todos_owner_delete on public.todos for delete to authenticated
  using (owner_id = (select auth.uid()) and not (select tablegate.is_anonymous()));

-- Grants open the door; the policies above decide which rows.
grant select, insert, update, delete on public.todos to authenticated;
grant all on public.todos to service_role;

-- +goose Down
drop table public.todos;
