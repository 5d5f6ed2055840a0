-- The export page cache when there is no Redis (embedded form): snapshots of $everything exports
-- (the packed, ordered (rid, version) list) and the cursors into them, each valid for 7 days.
create table export_snapshot (
  sid         text primary key,
  list        text not null,
  expires_at  timestamptz not null
);
create index export_snapshot_expires on export_snapshot (expires_at);

create table export_cursor (
  cursor      text primary key,
  value       text not null,
  expires_at  timestamptz not null
);
create index export_cursor_expires on export_cursor (expires_at);
