-- The job queue of the embedded form (no Redis: jobs run in the server's process). A job is recorded here
-- before the request that queued it is answered (a 202 for a respond-async Bundle or a sync, a 200 for a
-- patient deletion), and its outcome when it ends; a job not finished when the process stopped or crashed
-- runs again at the next start (shared/jobs/in-process.ts). `starts` counts the runs begun: a job cut
-- twice (it may be what kills the process) is not run blindly a third time.
create table local_job (
  id          text primary key,
  queue       text not null,
  -- The payload as JSON text; its byte fields (a Bundle as received) as text.
  payload     text not null,
  state       text not null default 'queued' check (state in ('queued', 'running', 'completed', 'failed')),
  starts      integer not null default 0,
  -- Not before (a webhook delivery's next attempt).
  run_at      timestamptz not null default now(),
  -- The processor's result: text as is for a definition whose result is text (resultBlob), JSON otherwise.
  result      text,
  error       jsonb,
  created_at  timestamptz not null default now(),
  finished_at timestamptz
);
create index local_job_pending on local_job (created_at) where state in ('queued', 'running');
create index local_job_finished on local_job (finished_at) where finished_at is not null;
