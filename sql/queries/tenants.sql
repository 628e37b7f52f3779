-- name: TenantGet :one
select id, name, created_at from tablegate.tenants where id = @id;

-- name: TenantList :many
select id, name, created_at from tablegate.tenants order by name, id;

-- name: TenantCreate :one
insert into tablegate.tenants (name) values (@name)
returning id, name, created_at;
