-- Anonymous exclusion. Anonymous sign-ins run as role authenticated with the
-- claim is_anonymous = true, so a grant cannot tell them apart from full
-- users; row policies must. Every write policy tablegate ships contains
-- "not tablegate.is_anonymous()" (created in 00003). This migration adds:
--
--   tablegate.is_full_user()        a signed-in user (sub present) that is
--                                   not an anonymous sign-in;
--   tablegate.exclude_anonymous(t)  restrictive policies that refuse every
--                                   insert, update and delete by anonymous
--                                   sign-ins on table t, whatever its other
--                                   (permissive) policies allow;
--   tablegate.include_anonymous(t)  removes them again;
--   tablegate.write_policies_without_anon_check(schemas)
--                                   the doctor's check: tables that role
--                                   authenticated may write although no
--                                   policy excludes anonymous sign-ins.

-- +goose Up
create function tablegate.is_full_user() returns boolean
language sql stable
set search_path = ''
as $$
  select coalesce(nullif(current_setting('request.jwt.claims', true), '')::jsonb ->> 'sub', '') <> ''
     and not tablegate.is_anonymous()
$$;
comment on function tablegate.is_full_user() is
  'True for a signed-in user (claim sub present) that is not an anonymous sign-in.';
grant execute on function tablegate.is_full_user() to anon, authenticated, service_role;

-- +goose StatementBegin
create function tablegate.exclude_anonymous(tbl regclass) returns void
language plpgsql volatile
set search_path = ''
as $$
declare
  cmd text;
begin
  foreach cmd in array array['insert', 'update', 'delete'] loop
    execute format('drop policy if exists %I on %s', 'tablegate_no_anonymous_' || cmd, tbl);
    execute format(
      'create policy %I on %s as restrictive for %s to authenticated %s',
      'tablegate_no_anonymous_' || cmd, tbl, cmd,
      case cmd
        when 'insert' then 'with check (not (select tablegate.is_anonymous()))'
        when 'update' then 'using (not (select tablegate.is_anonymous())) with check (not (select tablegate.is_anonymous()))'
        else 'using (not (select tablegate.is_anonymous()))'
      end);
  end loop;
end
$$;
-- +goose StatementEnd
comment on function tablegate.exclude_anonymous(regclass) is
  'Adds restrictive policies refusing insert/update/delete by anonymous sign-ins.';

-- +goose StatementBegin
create function tablegate.include_anonymous(tbl regclass) returns void
language plpgsql volatile
set search_path = ''
as $$
declare
  cmd text;
begin
  foreach cmd in array array['insert', 'update', 'delete'] loop
    execute format('drop policy if exists %I on %s', 'tablegate_no_anonymous_' || cmd, tbl);
  end loop;
end
$$;
-- +goose StatementEnd
comment on function tablegate.include_anonymous(regclass) is
  'Removes the policies added by tablegate.exclude_anonymous.';

-- policy_has_anon_check is true when a policy's expressions reference
-- tablegate.is_anonymous(), tablegate.is_full_user(), or the is_anonymous
-- claim by name (the Supabase documentation's
-- (auth.jwt() ->> 'is_anonymous')::boolean is false).
-- +goose StatementBegin
create function tablegate.policy_has_anon_check(policy oid) returns boolean
language sql stable
set search_path = ''
as $$
  select exists (
    select 1 from pg_catalog.pg_depend d
    where d.classid = 'pg_catalog.pg_policy'::regclass and d.objid = policy
      and d.refclassid = 'pg_catalog.pg_proc'::regclass
      and d.refobjid in ('tablegate.is_anonymous()'::regprocedure, 'tablegate.is_full_user()'::regprocedure)
  ) or exists (
    select 1 from pg_catalog.pg_policy p
    where p.oid = policy
      and (coalesce(pg_catalog.pg_get_expr(p.polqual, p.polrelid), '') ~ '''is_anonymous'''
        or coalesce(pg_catalog.pg_get_expr(p.polwithcheck, p.polrelid), '') ~ '''is_anonymous''')
  )
$$;
-- +goose StatementEnd

-- write_policies_without_anon_check lists, for the tables of the given
-- schemas, each write command that role authenticated (the role anonymous
-- sign-ins run as) holds the privilege for although no policy excludes
-- anonymous sign-ins:
--
--   reason 'rls_disabled'         row-level security is off: every
--                                 authenticated caller, guests included,
--                                 may write;
--   reason 'policy_without_check' no restrictive policy for the command
--                                 carries the check, and the permissive
--                                 policies listed in "policies" lack it.
--
-- A command with no permissive policy for authenticated is not listed (RLS
-- refuses it to everyone). The check is by reference: a policy counts as
-- checking when it calls tablegate.is_anonymous()/is_full_user() or names
-- the 'is_anonymous' claim.
-- +goose StatementBegin
create function tablegate.write_policies_without_anon_check(schemas text[] default array['public'])
returns table (table_schema text, table_name text, command text, reason text, policies text[])
language sql stable
set search_path = ''
as $$
  with t as (
    select c.oid, n.nspname::text as sch, c.relname::text as rel, c.relrowsecurity as rls
    from pg_catalog.pg_class c
    join pg_catalog.pg_namespace n on n.oid = c.relnamespace
    where c.relkind in ('r', 'p') and n.nspname = any (schemas)
  ), cmds(cmd, polcmd) as (
    values ('INSERT', 'a'::"char"), ('UPDATE', 'w'::"char"), ('DELETE', 'd'::"char")
  ), tc as (
    select t.*, cmds.cmd, cmds.polcmd from t cross join cmds
    where case cmds.cmd
            when 'DELETE' then pg_catalog.has_table_privilege('authenticated', t.oid, 'DELETE')
            -- a column-level grant is enough to insert or update
            else pg_catalog.has_any_column_privilege('authenticated', t.oid, cmds.cmd)
          end
  ), pol as (
    select tc.oid, tc.cmd, p.polname::text as name, p.polpermissive as permissive,
           tablegate.policy_has_anon_check(p.oid) as checked
    from tc join pg_catalog.pg_policy p
      on p.polrelid = tc.oid and p.polcmd in (tc.polcmd, '*')
    where 0::oid = any (p.polroles)
       or exists (select 1 from unnest(p.polroles) r(oid)
                  where pg_catalog.pg_has_role('authenticated', r.oid, 'MEMBER'))
  )
  select tc.sch, tc.rel, tc.cmd, 'rls_disabled', array[]::text[]
  from tc where not tc.rls
  union all
  select tc.sch, tc.rel, tc.cmd, 'policy_without_check',
         array(select pol.name from pol
               where pol.oid = tc.oid and pol.cmd = tc.cmd and pol.permissive and not pol.checked
               order by pol.name)
  from tc
  where tc.rls
    and exists (select 1 from pol where pol.oid = tc.oid and pol.cmd = tc.cmd and pol.permissive and not pol.checked)
    and not exists (select 1 from pol where pol.oid = tc.oid and pol.cmd = tc.cmd and not pol.permissive and pol.checked)
  order by 1, 2, 3
$$;
-- +goose StatementEnd
comment on function tablegate.write_policies_without_anon_check(text[]) is
  'Doctor check: write commands open to anonymous sign-ins (table_schema, table_name, command, reason, policies).';

revoke all on function tablegate.exclude_anonymous(regclass), tablegate.include_anonymous(regclass),
  tablegate.policy_has_anon_check(oid), tablegate.write_policies_without_anon_check(text[])
  from public, anon, authenticated;
grant execute on function tablegate.policy_has_anon_check(oid), tablegate.write_policies_without_anon_check(text[])
  to service_role;

-- +goose Down
-- +goose StatementBegin
do $$
declare
  r record;
begin
  for r in select p.polname, p.polrelid::regclass as tbl from pg_policy p
           where p.polname in ('tablegate_no_anonymous_insert', 'tablegate_no_anonymous_update', 'tablegate_no_anonymous_delete')
  loop
    execute format('drop policy %I on %s', r.polname, r.tbl);
  end loop;
end
$$;
-- +goose StatementEnd
drop function tablegate.write_policies_without_anon_check(text[]);
drop function tablegate.policy_has_anon_check(oid);
drop function tablegate.include_anonymous(regclass);
drop function tablegate.exclude_anonymous(regclass);
drop function tablegate.is_full_user();
