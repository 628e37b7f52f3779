-- Events: callers with only SQL can no longer forge events.
--
-- 00022 let anon and authenticated execute tablegate.emit_event, a SECURITY
-- DEFINER function that checked neither the name nor the table: a caller
-- with a SQL path as those roles (PostgREST exposing the tablegate schema,
-- a role logging in with only their privileges) could send every
-- subscriber of a table a fake todos.deleted for a row that still exists,
-- or an action event with a made-up payload.
--
--   * Table events: emit_event now refuses <prefix>.created, .updated and
--     .deleted for a table whose prefix is its name or the prefix of its
--     tablegate_events trigger, whoever calls it. Table events are written
--     only by that trigger, through tablegate.insert_event, which no API
--     role may execute.
--   * Action events: anon and authenticated lose EXECUTE on emit_event;
--     service_role keeps it. events.Emit switches the request's
--     transaction to service_role for the emitting statement only (the
--     connecting role is a member of service_role, as 00001 grants) and
--     back to the caller's role in that same statement. The tenant and
--     actor are still read from the caller's claims.

-- +goose Up
-- +goose StatementBegin
create or replace function tablegate.emit_event(p_name text, p_tbl text, p_key text, p_payload jsonb) returns bigint
language plpgsql volatile security definer
set search_path = ''
as $$
declare
  v_rel regclass;
  v_pk text;
  v_image jsonb;
  v_prefix text;
begin
  if p_name is null or p_name !~ '^[A-Za-z_][A-Za-z0-9_.:-]{0,199}$' then
    raise exception 'event name must be 1-200 characters of letters, digits and _ . : -' using errcode = '22023';
  end if;
  if p_payload is not null and pg_column_size(p_payload) > 65536 then
    raise exception 'event payload is larger than 64 KiB' using errcode = '22023';
  end if;
  v_rel := to_regclass(quote_ident(split_part(p_tbl, '.', 1)) || '.' || quote_ident(substr(p_tbl, length(split_part(p_tbl, '.', 1)) + 2)));
  if v_rel is null then
    raise exception 'no table %', quote_literal(p_tbl) using errcode = '42P01';
  end if;
  -- Table events come only from the table's trigger.
  if p_name ~ '\.(created|updated|deleted)$' then
    v_prefix := regexp_replace(p_name, '\.(created|updated|deleted)$', '');
    if v_prefix = (select c.relname::text from pg_catalog.pg_class c where c.oid = v_rel)
       or exists (select 1 from pg_catalog.pg_trigger t
                  where t.tgrelid = v_rel and t.tgname = 'tablegate_events'
                    and split_part(encode(t.tgargs, 'escape'), '\000', 2) = v_prefix) then
      raise exception 'event % is a table event of %: only its trigger writes it', quote_literal(p_name), v_rel
        using errcode = '42501';
    end if;
  end if;
  if p_key is not null then
    select a.attname into v_pk
    from pg_catalog.pg_index i
    join pg_catalog.pg_attribute a on a.attrelid = i.indrelid and a.attnum = i.indkey[0]
    where i.indrelid = v_rel and i.indisprimary and i.indnkeyatts = 1;
    if v_pk is not null then
      execute format('select to_jsonb(t) from %s t where %I::text = $1', v_rel, v_pk) into v_image using p_key;
    end if;
  end if;
  return tablegate.insert_event(p_name, v_rel::text, p_key, p_payload, v_image);
end
$$;
-- +goose StatementEnd
revoke all on function tablegate.emit_event(text, text, text, jsonb) from public, anon, authenticated;
grant execute on function tablegate.emit_event(text, text, text, jsonb) to service_role;

-- +goose Down
grant execute on function tablegate.emit_event(text, text, text, jsonb) to anon, authenticated;
-- +goose StatementBegin
create or replace function tablegate.emit_event(p_name text, p_tbl text, p_key text, p_payload jsonb) returns bigint
language plpgsql volatile security definer
set search_path = ''
as $$
declare
  v_rel regclass;
  v_pk text;
  v_image jsonb;
begin
  if p_name is null or p_name !~ '^[A-Za-z_][A-Za-z0-9_.:-]{0,199}$' then
    raise exception 'event name must be 1-200 characters of letters, digits and _ . : -' using errcode = '22023';
  end if;
  if p_payload is not null and pg_column_size(p_payload) > 65536 then
    raise exception 'event payload is larger than 64 KiB' using errcode = '22023';
  end if;
  v_rel := to_regclass(quote_ident(split_part(p_tbl, '.', 1)) || '.' || quote_ident(substr(p_tbl, length(split_part(p_tbl, '.', 1)) + 2)));
  if v_rel is null then
    raise exception 'no table %', quote_literal(p_tbl) using errcode = '42P01';
  end if;
  if p_key is not null then
    select a.attname into v_pk
    from pg_catalog.pg_index i
    join pg_catalog.pg_attribute a on a.attrelid = i.indrelid and a.attnum = i.indkey[0]
    where i.indrelid = v_rel and i.indisprimary and i.indnkeyatts = 1;
    if v_pk is not null then
      execute format('select to_jsonb(t) from %s t where %I::text = $1', v_rel, v_pk) into v_image using p_key;
    end if;
  end if;
  return tablegate.insert_event(p_name, v_rel::text, p_key, p_payload, v_image);
end
$$;
-- +goose StatementEnd
