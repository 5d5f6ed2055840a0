-- Search read-side indexes.
--
-- The lookup indexes end with rid, so a criterion checked for one resource (an EXISTS probe from a
-- resource row, as compile.ts writes them) is one index descent on all its columns, whatever the
-- planner guesses about how many rows a value has. Without rid a generic plan could pick the lookup
-- index and filter thousands of rows per probe. Replaced, not added; with rid the keys are unique, so
-- btree deduplication no longer packs equal values: bulk inserts into idx_token measured ~35% slower
-- (about +1.3 µs a row), not measurable in per-create transactions.
drop index idx_token_lookup;
create index idx_token_lookup on idx_token (res_type, code, value, system, rid);
drop index idx_reference_target;
create index idx_reference_target on idx_reference (target_id, target_type, code, res_type, rid);

-- A search sorted by a date parameter descending reads this index in order and stops at the page's end
-- (shared/fhir/search/ordered-scan.ts); ties go by rid, as the keyset order does. Ascending sorts read
-- idx_date_lookup (res_type, code, lo, hi) the same way.
create index idx_date_sort on idx_date (res_type, code, hi desc, rid);
