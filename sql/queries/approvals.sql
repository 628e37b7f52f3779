-- Approvals (tablegate.approvals). Reads run under RLS, confined to the
-- caller's active tenant: requesters see their own approvals, approvers
-- those of their tenant. Every write goes through
-- a SECURITY DEFINER function (tablegate.approval_request, approval_use,
-- approval_decide).

-- name: ApprovalGet :one
-- One approval with its state as of now (pending or approved-and-unused
-- past expires_at reads as expired).
select id, permission, actor, target_table, target_key, tenant_id,
  (case when state in ('pending', 'approved') and used_at is null and expires_at <= now()
        then 'expired' else state end)::text as state,
  requested_at, decided_by, decided_at, expires_at, used_at
from tablegate.approvals
where id = @id;

-- name: ApprovalList :many
-- Approvals visible to the caller, newest first, optionally of one state
-- (as of now) and requested before a time (keyset: pass the last row's
-- requested_at and id).
select id, permission, actor, target_table, target_key, tenant_id,
  (case when state in ('pending', 'approved') and used_at is null and expires_at <= now()
        then 'expired' else state end)::text as state,
  requested_at, decided_by, decided_at, expires_at, used_at
from tablegate.approvals
where (sqlc.narg(state)::text is null
       or (case when state in ('pending', 'approved') and used_at is null and expires_at <= now()
                then 'expired' else state end) = sqlc.narg(state)::text)
  and (sqlc.narg(actor)::uuid is null or actor = sqlc.narg(actor)::uuid)
  and (sqlc.narg(before_at)::timestamptz is null
       or (requested_at, id) < (sqlc.narg(before_at)::timestamptz, sqlc.narg(before_id)::uuid))
order by requested_at desc, id desc
limit @max_rows::int;

-- name: ApprovalRequest :one
-- One attempt of the caller at a gated permission: reuses or opens the
-- pending approval (see tablegate.approval_request). Run it in its own
-- transaction so that it survives the refusal of the request.
select approval_id::text as approval_id, outcome::text as outcome
from tablegate.approval_request(@permission::text, @target_table::text, @target_key::text,
  make_interval(secs => @ttl_seconds::float8), make_interval(secs => @valid_for_seconds::float8));

-- name: ApprovalUse :one
-- Admits the caller's request when an approval allows it; with single_use
-- marks it used. Run it in the request's transaction. Empty: not admitted.
select coalesce(tablegate.approval_use(@permission::text, @target_table::text, @target_key::text, @single_use::boolean)::text, '')::text as approval_id;

-- name: ApprovalDecide :one
-- Approves or denies a pending approval (approvers only, never their own).
select id, permission, actor, target_table, target_key, tenant_id, state,
  requested_at, decided_by, decided_at, expires_at, used_at
from tablegate.approval_decide(@id::uuid, @approve::boolean);
