-- Events: emit_event reads a row image only from a table service_role may
-- read, and finds it through the primary key's index.
--
-- emit_event is SECURITY DEFINER (it writes the outbox, which no API role
-- may write) and read the row image of the key it was given with the
-- owner's rights: service_role, the only API role that may execute it,
-- could copy into the outbox any row of any table with a one-column
-- primary key, also tables it has no grant on (the migration table;
-- another schema's; pg_authid under a superuser owner), and read it back
-- from tablegate.events. It now refuses (42501) a table service_role may
-- not read itself: no USAGE on its schema or no SELECT on it.
--
-- The image was found with "key::text = $1", which no index serves: one
-- emit scanned the whole table (42 ms at 500 000 rows). The key is now
-- compared as its column's base type with the primary key's equality
-- operator, and as text as before, so that the index serves the lookup
-- and the match stays exact; a key the type cannot hold has no image.

-- +goose Up
-- +goose StatementBegin
create or replace function tablegate.emit_event(p_name text, p_tbl text, p_key text, p_payload jsonb) returns bigint
language plpgsql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  v_rel regclass;
  v_pk text;
  v_pktype text;
  v_opns text;
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
    -- The row image is read with the owner's rights: only from a table
    -- that service_role, the one API role that may call this, may read.
    if not (pg_catalog.has_schema_privilege('service_role',
              (select c.relnamespace from pg_catalog.pg_class c where c.oid = v_rel), 'USAGE')
            and pg_catalog.has_table_privilege('service_role', v_rel, 'SELECT')) then
      raise exception 'service_role may not read %: no event image', v_rel using errcode = '42501';
    end if;
    select a.attname into v_pk
    from pg_catalog.pg_index i
    join pg_catalog.pg_attribute a on a.attrelid = i.indrelid and a.attnum = i.indkey[0]
    where i.indrelid = v_rel and i.indisprimary and i.indnkeyatts = 1;
    if v_pk is not null then
      -- The key's base type without its modifier (a cast to varchar(5) or
      -- numeric(6,2) would round or cut the key), and the equality
      -- operator of the primary key's operator class (an extension
      -- type's, which this search_path does not see), so that the index
      -- serves the lookup; the text comparison keeps the match exact.
      select pg_catalog.format_type(case when ty.typtype = 'd' then ty.typbasetype else a.atttypid end, -1),
             pg_catalog.quote_ident(n.nspname)
        into v_pktype, v_opns
      from pg_catalog.pg_index i
      join pg_catalog.pg_attribute a on a.attrelid = i.indrelid and a.attnum = i.indkey[0]
      join pg_catalog.pg_type ty on ty.oid = a.atttypid
      join pg_catalog.pg_opclass oc on oc.oid = i.indclass[0]
      join pg_catalog.pg_amop ao on ao.amopfamily = oc.opcfamily and ao.amopstrategy = 3
        and ao.amoplefttype = oc.opcintype and ao.amoprighttype = oc.opcintype
      join pg_catalog.pg_operator o on o.oid = ao.amopopr
      join pg_catalog.pg_namespace n on n.oid = o.oprnamespace
      where i.indrelid = v_rel and i.indisprimary;
      if v_pktype is not null then
        begin
          execute format('select to_jsonb(t) from %s t where %I operator(%s.=) $1::%s and %I::text = $1',
            v_rel, v_pk, v_opns, v_pktype, v_pk) into v_image using p_key;
        exception when others then
          -- The key does not cast (not a number, a domain's check, an
          -- extension type's syntax): no row has it, as the text
          -- comparison below would find. A cancellation is not caught.
          v_image := null;
        end;
      else
        execute format('select to_jsonb(t) from %s t where %I::text = $1', v_rel, v_pk) into v_image using p_key;
      end if;
    end if;
  end if;
  return tablegate.insert_event(p_name, v_rel::text, p_key, p_payload, v_image);
end
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
create or replace function tablegate.emit_event(p_name text, p_tbl text, p_key text, p_payload jsonb) returns bigint
language plpgsql volatile security definer
set search_path = pg_catalog, pg_temp
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
