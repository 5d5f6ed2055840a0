-- $get-resource-counts: the rows of `resource` per type (tombstones included, as HAPI counts them), kept
-- exact by statement-level triggers. Each write statement appends one delta row per type it touched: no
-- hot counter row, so concurrent writers never wait on each other. A read sums the deltas and folds
-- them into one row per type once they pile up (shared/fhir/repo/resource-counts.ts).
create table resource_count (
  res_type text not null,
  n        bigint not null
);

insert into resource_count (res_type, n) select res_type, count(*) from resource group by res_type;

create function resource_count_inserted() returns trigger language plpgsql as $$
begin
  insert into resource_count (res_type, n) select res_type, count(*) from inserted group by res_type;
  return null;
end
$$;

create function resource_count_deleted() returns trigger language plpgsql as $$
begin
  insert into resource_count (res_type, n) select res_type, -count(*) from removed group by res_type;
  return null;
end
$$;

create function resource_count_truncated() returns trigger language plpgsql as $$
begin
  delete from resource_count;
  return null;
end
$$;

create trigger resource_count_insert after insert on resource
  referencing new table as inserted for each statement execute function resource_count_inserted();
create trigger resource_count_delete after delete on resource
  referencing old table as removed for each statement execute function resource_count_deleted();
create trigger resource_count_truncate after truncate on resource
  for each statement execute function resource_count_truncated();

-- $expunge with expungeDeletedResources finds the tombstones without scanning every resource.
create index resource_deleted on resource (rid) where deleted;
