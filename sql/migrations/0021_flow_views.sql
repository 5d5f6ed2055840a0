-- Patient flows and sessions are one record with two views (issue 24): the per-patient lists show
-- every flow of the patient whatever endpoint created it, so their order index no longer leads with
-- `kind`. The rows and their ids are kept as they are (`kind` still records the creating endpoint).
create index patient_flow_patient_order on patient_flow (organization_id, patient_id, created_at desc, seq desc);
drop index patient_flow_order;
