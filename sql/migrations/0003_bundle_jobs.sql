-- Transaction Bundles processed by jobs: the write results are recorded in the same database transaction
-- as the writes, so a job retried after a crash finds its bundle applied and never applies it twice.
create table bundle_job (
  job_id       text primary key,
  results      text not null,
  completed_at timestamptz not null default now()
);
