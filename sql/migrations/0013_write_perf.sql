-- Write-path costs (issues 3 and 4): see /work/main/BENCHMARKS.md "Where the time goes".

-- The referential-integrity check probes the (res_type, id) key once per target. The set-wise form
-- (anti join over unnest) got a plan cached while `resource` was small (a hash of the whole table),
-- and PL/pgSQL kept it as the table grew: every create re-read the table.
create or replace function fhir_require_references(types text[], ids text[]) returns int
language plpgsql volatile as $$
begin
  for i in 1 .. coalesce(array_length(types, 1), 0) loop
    perform 1 from resource r where r.res_type = types[i] and r.id = ids[i] and not r.deleted;
    if not found then
      raise exception using errcode = 'FH094', message = 'missing reference target', detail = i::text;
    end if;
  end loop;
  return 0;
end
$$;
