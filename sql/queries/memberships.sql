-- name: MembershipList :many
-- Memberships of one user (RLS: a user reads only their own).
select user_id, scope, scope_id, roles, created_at
from tablegate.memberships
where user_id = @user_id
order by scope, scope_id;

-- name: MembershipGet :one
select user_id, scope, scope_id, roles, created_at
from tablegate.memberships
where user_id = @user_id and scope = @scope and scope_id = @scope_id;

-- name: MembershipUpsert :one
insert into tablegate.memberships (user_id, scope, scope_id, roles)
values (@user_id, @scope, @scope_id, @roles)
on conflict (user_id, scope, scope_id) do update set roles = excluded.roles
returning user_id, scope, scope_id, roles, created_at;

-- name: MembershipDelete :exec
delete from tablegate.memberships
where user_id = @user_id and scope = @scope and scope_id = @scope_id;

-- name: MembershipHasRoles :many
-- For a batch of scope ids: which ones the user holds (with role, when given).
-- One query for a whole list page.
select scope_id
from tablegate.memberships
where user_id = @user_id and scope = @scope and scope_id = any (@scope_ids::text[])
  and (sqlc.narg(role)::text is null or sqlc.narg(role)::text = any (roles));
