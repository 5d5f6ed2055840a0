-- Search plans that stay linear without statistics (issue 23, shared/fhir/search/bounded.ts).
--
-- A criterion checked on one resource (an EXISTS probe, compile.ts) names the resource's rid, its type and
-- the parameter code: the rid keys now hold them all, so that the probe is one descent to the rows it
-- needs. With the rid alone beside a lookup index on (res_type, code, value...), a generic plan made
-- without statistics could pick the lookup and read every row of the code for each resource probed
-- (a date probe with its range on lo, a quantity probe). Token rows have had such a key since 0015.
drop index idx_date_rid;
create index idx_date_rid on idx_date (rid, res_type, code, lo, hi);
drop index idx_quantity_rid;
create index idx_quantity_rid on idx_quantity (rid, res_type, code, value);
drop index idx_number_rid;
create index idx_number_rid on idx_number (rid, res_type, code, value);
drop index idx_string_rid;
create index idx_string_rid on idx_string (rid, res_type, code, value_norm);
drop index idx_uri_rid;
create index idx_uri_rid on idx_uri (rid, res_type, code, value);
drop index idx_composite_rid;
create index idx_composite_rid on idx_composite (rid, res_type, code, value1);
drop index idx_reference_rid;
create index idx_reference_rid on idx_reference (rid, res_type, code, target_id, target_type);

-- The resources of one type in rid order (the keyset order of search pages): when every criterion
-- matches many rows, a page reads them in this order, probes each, and stops when the page is full.
create index resource_type_rid on resource (res_type, rid) where not deleted;
