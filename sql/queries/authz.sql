-- Queries of package authz.

-- name: MembershipMatch :many
-- Which of a batch of membership questions the user satisfies: question i
-- is (scopes[i], scope_ids[i], roles[i]); role '' asks for any role. The
-- 1-based indexes of the satisfied questions come back. One query answers
-- a whole list page.
select i::int as idx
from generate_subscripts(@scopes::text[], 1) as i
where exists (
  select 1 from tablegate.memberships m
  where m.user_id = @user_id::uuid
    and m.scope = (@scopes::text[])[i]
    and m.scope_id = (@scope_ids::text[])[i]
    and ((@roles::text[])[i] = '' or (@roles::text[])[i] = any (m.roles))
)
order by i;
