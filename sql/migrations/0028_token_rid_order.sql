-- A token value's rows in rid order (issue 23): a sparse bounded page reads its driver's candidates in rid
-- order and stops at the page (query/rid-ordered.ts); by idx_token_lookup (res_type, code, value, patient,
-- system) it read every row of the value to sort them (4,090 rows, 3,994 buffers for code=72166-2, a
-- page of 21). The key leads with the value as `value || ''`, which only that statement names: keyed
-- (res_type, code, value, rid), a plan without statistics took it for the other searches on a value too,
-- as a tie with the lookup key, and filtered a patient's rows out of every row of the code
-- (subject=Patient/x&code=8302-2: 41 -> 8,009 buffers); with (res_type, code) first, a probe of one rid
-- read the code's range for `rid =` (fhir-search-plans.test.ts).
create index idx_token_rid_order on idx_token ((value || ''), res_type, code, rid);
