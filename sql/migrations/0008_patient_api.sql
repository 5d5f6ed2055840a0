-- The Patient Connection API (issue 7): organizations and their API keys, the FHIR source catalog,
-- patients, patient flows and sessions, connections, and saved responses of idempotent POSTs.
-- Timestamps the API shows are kept to the millisecond (the API renders milliseconds), and every listed
-- table has a `seq` (insertion order) as the tie-break of its newest-first order.

create table organization (
  id          text primary key,                 -- org_...
  name        text not null,
  created_at  timestamptz not null default date_trunc('milliseconds', now())
);

-- An organization's API keys: only the SHA-256 of the key is stored; each key pins an API version.
create table organization_api_key (
  id               text primary key,            -- key_...
  organization_id  text not null references organization (id) on delete cascade,
  key_hash         text not null unique,
  prefix           text not null,
  label            text not null,
  version          text not null,
  created_at       timestamptz not null default date_trunc('milliseconds', now()),
  revoked_at       timestamptz
);
create index organization_api_key_org on organization_api_key (organization_id);

-- The catalog of FHIR sources (connection targets), managed by operators. The SMART client credentials
-- are for the connect flow only and never leave the server.
create table fhir_source (
  id             text primary key,              -- fhirsrc_...
  name           text not null,
  type           text,
  fhir_base_url  text not null unique,
  logo_url       text,
  portal_url     text,
  client_id      text,
  client_secret  text,
  scopes         text,
  created_at     timestamptz not null default date_trunc('milliseconds', now()),
  seq            bigint generated always as identity unique
);
create index fhir_source_order on fhir_source (created_at desc, seq desc);

-- Patients: the organization's own patient_id is the key. Deleting a patient removes the row and,
-- by the cascades below, its flows, sessions and connections.
create table patient (
  organization_id  text not null references organization (id) on delete cascade,
  patient_id       text not null,
  email            text,
  name             text,
  metadata         jsonb not null default '{}',
  created_at       timestamptz not null default date_trunc('milliseconds', now()),
  seq              bigint generated always as identity unique,
  primary key (organization_id, patient_id)
);
create index patient_order on patient (organization_id, created_at desc, seq desc);
create index patient_email on patient (organization_id, email);

-- Patient flows (kind 'patient_flow', pf_ ids) and sessions (kind 'session', sess_ ids): one shape.
-- `connection_id` is set in direct mode (a fhir_source id); `recommended_connection_ids` is null then.
-- `status` is the stored state; an open row past expires_at reads as expired until the expiry job marks it.
create table patient_flow (
  id                          text primary key,
  kind                        text not null check (kind in ('patient_flow', 'session')),
  organization_id             text not null,
  patient_id                  text not null,
  status                      text not null default 'open' check (status in ('open', 'complete', 'expired')),
  connection_id               text references fhir_source (id),
  recommended_connection_ids  text[],
  return_url                  text not null,
  return_button_label         text,
  metadata                    jsonb not null default '{}',
  expires_at                  timestamptz not null,
  created_at                  timestamptz not null default date_trunc('milliseconds', now()),
  completed_at                timestamptz,
  seq                         bigint generated always as identity unique,
  foreign key (organization_id, patient_id) references patient (organization_id, patient_id) on delete cascade
);
create index patient_flow_order on patient_flow (organization_id, patient_id, kind, created_at desc, seq desc);
create index patient_flow_open_expiry on patient_flow (expires_at) where status = 'open';

-- A patient's link to a FHIR source, made through a flow or session (failed attempts included).
-- The connect flow (issue 8) adds its token columns to this table in its own migration.
create table connection (
  id               text primary key,            -- conn_...
  organization_id  text not null,
  patient_id       text not null,
  fhir_source_id   text not null references fhir_source (id),
  flow_id          text references patient_flow (id) on delete set null,
  status           text not null check (status in ('active', 'failed', 'expired', 'refresh_failed', 'disconnected')),
  scopes           text[] not null default '{}',
  failure_code     text,
  failure_at       timestamptz,
  created_at       timestamptz not null default date_trunc('milliseconds', now()),
  updated_at       timestamptz not null default date_trunc('milliseconds', now()),
  seq              bigint generated always as identity unique,
  foreign key (organization_id, patient_id) references patient (organization_id, patient_id) on delete cascade
);
create index connection_patient on connection (organization_id, patient_id, created_at desc, seq desc);
create index connection_flow on connection (flow_id);

-- Idempotency-Key (Stripe semantics): the first request with a key reserves it (response null while it
-- runs); its response is saved and replayed for the same key and body for 24 hours.
create table idempotency_key (
  organization_id  text not null references organization (id) on delete cascade,
  key              text not null,
  request_hash     text not null,
  status           integer,
  response         text,
  created_at       timestamptz not null default now(),
  primary key (organization_id, key)
);
create index idempotency_key_created on idempotency_key (created_at);
