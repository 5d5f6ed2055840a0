-- Admin jobs (reindex, expunge, terminology reindex...): the durable record of each job, its progress
-- and its resume cursor. BullMQ carries only the job id; a worker that dies leaves the cursor of the
-- last committed batch, and the retried job continues from there.
create table admin_job (
  id               uuid primary key,
  kind             text not null,
  params           jsonb not null default '{}',
  state            text not null default 'queued' check (state in ('queued', 'running', 'completed', 'failed', 'cancelled')),
  processed        bigint not null default 0,
  total            bigint,
  cursor           jsonb,
  result           jsonb,
  error            jsonb,
  -- Two requests for the same work while it is queued or running get the same job.
  dedupe_key       text,
  cancel_requested boolean not null default false,
  -- The attempt that runs it now: checkpoints of an attempt that lost the job are refused.
  owner            uuid,
  created_at       timestamptz not null default now(),
  started_at       timestamptz,
  updated_at       timestamptz not null default now(),
  finished_at      timestamptz
);
create unique index admin_job_active_dedupe on admin_job (dedupe_key) where state in ('queued', 'running');
create index admin_job_created on admin_job (created_at desc, id);

-- Resources marked by $mark-all-resources-for-reindexing, consumed by reindexing passes.
create table reindex_pending (
  rid bigint primary key
);
