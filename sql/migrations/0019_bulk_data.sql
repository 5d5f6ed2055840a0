-- Bulk Data ($export, $import): the jobs themselves are admin jobs (0006); their files live here when no
-- shared directory is configured (BULK_STORAGE_DIR), so that any API node can serve them.

-- A file is a sequence of chunks (each a part of the NDJSON text, written with the job checkpoint that
-- follows it): a chunk is written once, whole, and a resumed job writes the same chunk number again.
create table bulk_chunk (
  job_id   uuid not null,
  file_id  text not null,
  n        integer not null,
  data     text not null,
  primary key (job_id, file_id, n)
);

-- The lines an import could not store, one OperationOutcome each, written in the transaction of the batch
-- they were read in (so a resumed import neither loses nor repeats one); rendered into the job's error
-- files when it ends.
create table bulk_import_error (
  job_id   uuid not null,
  input    integer not null,
  line     bigint not null,
  outcome  text not null,
  primary key (job_id, input, line)
);

do $$
begin
  if exists (select 1 from pg_settings where name = 'default_toast_compression' and 'lz4' = any(enumvals)) then
    alter table bulk_chunk alter column data set compression lz4;
  end if;
end
$$;

-- NDJSON files uploaded for an $import (`bun run import --ndjson` sends local files this way): their
-- text is in the file store as job `id`'s file `input`, like any bulk file; kept BULK_FILE_TTL_HOURS.
create table bulk_upload (
  id          uuid primary key,
  owner       text,
  bytes       bigint not null,
  chunks      integer not null,
  created_at  timestamptz not null default now()
);
