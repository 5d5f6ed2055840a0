-- The connect flow (issue 8): SMART authorization attempts, the source tokens of a connection (encrypted
-- at rest), sync state, the map from source resources to our FHIR ids, and webhooks.

-- One row per authorize redirect: `state` is the key the callback presents; the PKCE verifier stays here.
create table connect_attempt (
  state           text primary key,
  flow_id         text not null references patient_flow (id) on delete cascade,
  fhir_source_id  text not null references fhir_source (id) on delete cascade,
  code_verifier   text not null,
  redirect_uri    text not null,
  token_endpoint  text not null,
  created_at      timestamptz not null default now(),
  used_at         timestamptz
);
create index connect_attempt_created on connect_attempt (created_at);

-- Tokens (AES-256-GCM, see shared/connect/token-cipher.ts), the patient's id at the source, and the
-- state of the background pull.
alter table connection
  add column access_token      text,
  add column refresh_token     text,
  add column token_expires_at  timestamptz,
  add column token_endpoint    text,
  add column source_patient_id text,
  add column sync_status       text check (sync_status in ('queued', 'running', 'succeeded', 'failed')),
  add column sync_started_at   timestamptz,
  add column last_synced_at    timestamptz,
  add column sync_total        integer,
  add column sync_error        text;
create index connection_resync on connection (last_synced_at) where status = 'active';

-- Source resource -> our resource, per patient and source: a re-sync (or a reconnect to the same source)
-- updates the resources it stored before instead of creating copies.
create table connect_resource_map (
  organization_id  text not null,
  patient_id       text not null,
  fhir_source_id   text not null,
  res_type         text not null,
  source_id        text not null,
  our_id           text not null,
  primary key (organization_id, patient_id, fhir_source_id, res_type, source_id),
  foreign key (organization_id, patient_id) references patient (organization_id, patient_id) on delete cascade
);

-- Webhook endpoints of an organization. The signing secret is stored encrypted like the tokens.
create table webhook_endpoint (
  id               text primary key,            -- wh_...
  organization_id  text not null references organization (id) on delete cascade,
  url              text not null,
  events           text[] not null,
  status           text not null default 'active' check (status in ('active', 'disabled')),
  description      text,
  metadata         jsonb not null default '{}',
  api_version      text not null,
  secret           text not null,
  created_at       timestamptz not null default date_trunc('milliseconds', now()),
  updated_at       timestamptz not null default date_trunc('milliseconds', now()),
  seq              bigint generated always as identity unique
);
create index webhook_endpoint_order on webhook_endpoint (organization_id, created_at desc, seq desc);

-- One event per endpoint it is sent to (the delivery-record form), with the state of its delivery.
create table webhook_event (
  id                   text primary key,        -- evt_...
  organization_id      text not null,
  webhook_endpoint_id  text not null references webhook_endpoint (id) on delete cascade,
  type                 text not null,
  api_version          text not null,
  payload              text not null,           -- the event JSON exactly as sent (and signed)
  attempts             integer not null default 0,
  next_attempt_at      timestamptz,
  delivered_at         timestamptz,
  last_status_code     integer,
  last_response_body   text,
  last_redelivered_at  timestamptz,
  created_at           timestamptz not null default date_trunc('milliseconds', now()),
  seq                  bigint generated always as identity unique
);
create index webhook_event_order on webhook_event (webhook_endpoint_id, created_at desc, seq desc);

-- Every delivery attempt.
create table webhook_delivery (
  id           bigint generated always as identity primary key,
  event_id     text not null references webhook_event (id) on delete cascade,
  attempt      integer not null,
  manual       boolean not null default false,
  attempted_at timestamptz not null default now(),
  status_code  integer,
  duration_ms  integer not null,
  error        text,
  response     text
);
create index webhook_delivery_event on webhook_delivery (event_id, id);
