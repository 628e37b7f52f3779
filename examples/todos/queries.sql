-- name: TodoGet :one
select id, tenant_id, owner_id, title, done, created_at from public.todos where id = $1;

-- name: TodoList :many
select id, tenant_id, owner_id, title, done, created_at from public.todos
where (sqlc.narg(after)::uuid is null or id > sqlc.narg(after)::uuid)
  and (sqlc.narg(done)::boolean is null or done = sqlc.narg(done)::boolean)
order by id
limit sqlc.arg(lim)::int;

-- name: TodoCreate :one
insert into public.todos (title) values ($1)
returning id, tenant_id, owner_id, title, done, created_at;

-- name: TodoUpdate :one
update public.todos
set title = coalesce(sqlc.narg(title)::text, title),
    done  = coalesce(sqlc.narg(done)::boolean, done)
where id = sqlc.arg(id)
returning id, tenant_id, owner_id, title, done, created_at;

-- name: TodoDelete :execrows
delete from public.todos where id = $1;

-- name: TodoComplete :one
update public.todos set done = true where id = $1 and not done
returning id, tenant_id, owner_id, title, done, created_at;

-- name: TodoCountOpen :one
select count(*) from public.todos where not done;
