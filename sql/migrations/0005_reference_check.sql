-- Referential integrity checked inside the write statement itself: raises SQLSTATE FH094 (detail: the
-- 1-based position of the first missing target) so the whole statement, index rows included, is undone.
-- Volatile, so that the planner neither inlines nor skips the call.
create function fhir_require_references(types text[], ids text[]) returns int
language plpgsql volatile as $$
declare
  missing bigint;
begin
  select min(t.n) into missing
  from unnest(types, ids) with ordinality as t(type, id, n)
  where not exists (select 1 from resource r where r.res_type = t.type and r.id = t.id and not r.deleted);
  if missing is not null then
    raise exception using errcode = 'FH094', message = 'missing reference target', detail = missing::text;
  end if;
  return 0;
end
$$;
