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

-- Most resources have no narrative, and an empty tsvector still costs a GIN insert (into the one
-- posting tree of the empty item, ~20 µs a row). No narrative is now NULL and only narratives are
-- indexed; `narrative @@ query` (a strict operator) implies `narrative is not null`, so _text searches
-- use the partial index unchanged, and a NULL matches nothing just as the empty tsvector did.
alter table idx_fulltext alter column narrative drop not null;
update idx_fulltext set narrative = null where narrative = ''::tsvector;
drop index idx_fulltext_narrative;
create index idx_fulltext_narrative on idx_fulltext using gin (narrative) where narrative is not null;

-- The per-type counts of $get-resource-counts: the write statement appends its own delta row (a CTE
-- over the inserted rows, shared/fhir/repo/repo.ts) instead of a statement-level trigger with a
-- transition table (a PL/pgSQL call per write). Deletions ($expunge) keep their trigger.
drop trigger resource_count_insert on resource;
drop function resource_count_inserted();
