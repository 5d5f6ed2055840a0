-- Search read-side indexes.
-- A search sorted by a date parameter descending reads this index in order and stops at the page's end
-- (shared/fhir/search/ordered-scan.ts); ties go by rid, as the keyset order does. Ascending sorts read
-- idx_date_lookup (res_type, code, lo, hi) the same way.
create index idx_date_sort on idx_date (res_type, code, hi desc, rid);
