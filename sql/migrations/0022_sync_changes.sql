-- What the last completed pull of a connection changed (issue 24): resources created, updated,
-- deleted (gone from the source since the pull before) and unchanged. Null until a pull completes.
alter table connection
  add column sync_created   integer,
  add column sync_updated   integer,
  add column sync_deleted   integer,
  add column sync_unchanged integer;
