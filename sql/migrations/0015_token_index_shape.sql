-- Token index shape (issues 3 and 4): a lookup key that knows the patient, and a rid key with the row.
--
-- `patient`: the one Patient the resource references through any reference parameter, '*' when it
-- references several (ids never contain '*'), null when none. A search by a patient and a code
-- (`Observation?subject=Patient/1&code=...`, compile.ts) then finds the code's rows of that patient
-- (and of '*') as one range of the lookup index, then checks the reference on those few rows, instead
-- of checking the code on every resource of the patient (94 index descents for a Synthea patient).
-- Any resource that references the patient through the searched parameter has the patient or '*' here.
--
-- The lookup (res_type, code, value, patient, system) no longer ends with rid: equal keys (one code of
-- one patient) are packed by btree deduplication: 19 MB instead of 102 MB on Synthea x10.
-- The rid key (rid, res_type, code, value, system) answers the check of one candidate (`i.rid = c.rid and
-- i.res_type = ... and i.code = ... and i.value = ...`): one descent to the exact row, read from the
-- index alone when the page is all-visible, instead of reading every token row of the resource. It also
-- serves the delete of a superseded version's rows. The lookup could serve such a check too, only by
-- reading every row of the code: the rid key wins after a VACUUM (index-only), and before one it is
-- created after the lookup on purpose: for a generic plan both estimate one row, and the planner keeps
-- the index it considers last on a tie (tests/fhir-search-patient-code.test.ts checks the plan).
alter table idx_token add column patient text;
update idx_token t set patient = p.patient
from (
  select rid, case when count(distinct target_id) = 1 then min(target_id) else '*' end as patient
  from idx_reference where target_type = 'Patient' and target_id is not null group by rid
) p
where p.rid = t.rid;
drop index idx_token_lookup;
create index idx_token_lookup on idx_token (res_type, code, value, patient, system);
drop index idx_token_rid;
create index idx_token_rid on idx_token (rid, res_type, code, value, system);
