-- Dates of day, month or year precision are searched by the calendar days as written in the resource,
-- its zone not considered (R4 search, HAPI's ordinal dates): `2012-02-12T00:49:45+01:00` is found by
-- `date=2012-02-12`, though in UTC it is the 11th (shared/fhir/search/params/date.ts).
--
-- The instants (lo, hi) stay for searches with a time, sorting, and as the index range a day search
-- reads (widened by the largest zone offset), so no new index is needed. Rows written before this
-- migration get the days of their instants in UTC (what searches compared until now), and their
-- resources are queued for the reindexing pass (reindex_pending, run every 10 s by a worker), which
-- writes the days as written.
alter table idx_date add column lo_day date, add column hi_day date;
update idx_date set lo_day = (lo at time zone 'UTC')::date, hi_day = (hi at time zone 'UTC')::date;
alter table idx_date alter column lo_day set not null, alter column hi_day set not null;
insert into reindex_pending (rid) select distinct rid from idx_date on conflict do nothing;
