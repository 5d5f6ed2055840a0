-- Rows that name a resource by type and id rather than by rid: when the resource row is physically
-- removed ($expunge), they go with it, so no table keeps an orphan. (Tables with a rid column are
-- cleaned by the expunge itself.) One statement-level trigger per removal, over its transition table.
create function fhir_forget_removed_resources() returns trigger language plpgsql as $$
begin
  delete from connect_resource_map m using removed r where m.res_type = r.res_type and m.our_id = r.id;
  return null;
end $$;

create trigger resource_removed after delete on resource
  referencing old table as removed for each statement execute function fhir_forget_removed_resources();

create function fhir_forget_all_resources() returns trigger language plpgsql as $$
begin
  delete from connect_resource_map;
  return null;
end $$;

create trigger resource_truncated after truncate on resource for each statement execute function fhir_forget_all_resources();
