-- Every text column compares in code point order, collation "C", whatever the database's default.
--
-- Under a libc collation other than C/POSIX (C.UTF-8 and en_US.UTF-8 included), each comparison of two
-- text keys in a B-tree goes through strcoll with a locale lookup; under "C" it is one memcmp. The search
-- index tables are written and read by text keys (res_type, code, value, target_id, ...): an $import of
-- Synthea x10 spent 60% of PostgreSQL's CPU in B-tree inserts (perf), and with these columns in "C" its
-- backends spent 6-10% less per resource on a quiet machine (bench/bulk-import.ts, alternated). Nor can
-- an upgrade of the C library's locale data reorder (and so corrupt) an index any more. Equality is the same
-- (both collations are deterministic); order is code point order, as UTF-8 bytes sort, and as the
-- server's own string rules (types/string.ts) already assume: on a C.UTF-8 database nothing changes
-- order, on an en_US one `_sort` and paging no longer depend on the operating system's locale tables.
--
-- All tables, not only the search ones: a comparison between a "C" column and a default-collation one
-- resolves to "C", and an index of the default-collation side could then not serve it (a join of
-- idx_reference.target_id to resource.id, of term_expansion.code to idx_token.value). Only the indexes
-- are rebuilt (text to text in another collation needs no table rewrite), each once, and in the order they
-- were created: where two indexes tie for a generic plan the planner keeps the one it considers last, and
-- 0015, 0026 and 0028 create theirs in an order that the plan tests check. A column's compression (lz4,
-- 0016/0017/0019) and storage, which a change of type resets, are set again.
-- A later migration that adds a text column declares `collate "C"` (tests/migrations.test.ts checks).
-- Synthea x10 (135,000 resources): about 25 s, under the migration lock. In a rolling upgrade, a node of
-- the previous release whose connection prepared a statement on these tables sees it fail once inside a
-- transaction ("cached plan must not change result type"; outside one postgres.js prepares it again):
-- restart the old nodes with the new ones.
do $$
declare
  t record;
  defs text[];
  def text;
  ix regclass;
  analysed boolean;
begin
  for t in
    select a.attrelid as rel,
      string_agg(
        format('alter column %I type text collate "C"', a.attname)
          || case a.attcompression when 'l' then format(', alter column %I set compression lz4', a.attname)
                                   when 'p' then format(', alter column %I set compression pglz', a.attname) else '' end
          || case when a.attstorage <> 'x' then format(', alter column %I set storage %s', a.attname,
                 case a.attstorage when 'p' then 'plain' when 'e' then 'external' else 'main' end) else '' end,
        ', ' order by a.attnum) as changes
    from pg_attribute a
    join pg_class r on r.oid = a.attrelid and r.relkind in ('r', 'p')
    where r.relnamespace = current_schema()::regnamespace
      and a.attnum > 0 and not a.attisdropped
      and a.atttypid = 'text'::regtype and a.attcollation <> '"C"'::regcollation
    group by a.attrelid
  loop
    -- A change of type drops the columns' statistics: a table that had some is analysed again after it
    -- (one that never had any stays so, as the plans of a fresh load expect).
    analysed := exists (select 1 from pg_statistic s where s.starelid = t.rel);
    -- The indexes that no constraint owns, in creation order: dropped, then made again after the change.
    select coalesce(array_agg(pg_get_indexdef(i.indexrelid) order by i.indexrelid), '{}') into defs
    from pg_index i
    where i.indrelid = t.rel and not exists (select 1 from pg_constraint c where c.conindid = i.indexrelid);
    for ix in
      select i.indexrelid::regclass from pg_index i
      where i.indrelid = t.rel and not exists (select 1 from pg_constraint c where c.conindid = i.indexrelid)
    loop
      execute format('drop index %s', ix);
    end loop;
    execute format('alter table %s %s', t.rel::regclass, t.changes);
    foreach def in array defs loop
      execute def;
    end loop;
    if analysed then
      execute format('analyze %s', t.rel::regclass);
    end if;
  end loop;
end $$;
