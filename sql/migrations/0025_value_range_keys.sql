-- Number and quantity lookups on the range a search compares (issue 23): a row's value, or a Range's
-- ends with a missing end unbounded (types/number.ts valueOrRange). The lookups on (res_type, code,
-- value) served no search: a predicate on `coalesce(value, lo)` read every row of the code, and a
-- driver's count of a rare value (Observation?value-quantity=117.64) read 50,000 rows on Synthea x10.
-- The unit's system and code follow, checked in the index (`value-quantity=ge0.18|http://unitsofmeasure.org|kU/L`
-- read 54,000 rows to find the few in kU/L). Replaced, not added. The rid keys are created again after them: a probe that names res_type and code
-- (compile.ts drive) ties the two on a generic plan, and the planner keeps the index it considers last.
drop index idx_quantity_lookup;
create index idx_quantity_lookup on idx_quantity (res_type, code, (coalesce(value, lo, '-Infinity'::numeric)), (coalesce(value, hi, 'Infinity'::numeric)), system, unit_code);
drop index idx_number_lookup;
create index idx_number_lookup on idx_number (res_type, code, (coalesce(value, lo, '-Infinity'::numeric)), (coalesce(value, hi, 'Infinity'::numeric)));
drop index idx_quantity_rid;
create index idx_quantity_rid on idx_quantity (rid, res_type, code, value);
drop index idx_number_rid;
create index idx_number_rid on idx_number (rid, res_type, code, value);
