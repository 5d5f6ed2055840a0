-- Stored secrets are sealed by the application under a key kept outside the database
-- (shared/secrets/). The first process that starts with this migration seals what earlier versions
-- stored in plain text (fhir_source.client_secret, connect_attempt.code_verifier, idempotent answers)
-- or under the key they derived from server_secret, and records it here (stored-secrets.ts).
create table secret_migration (
  name     text primary key,
  done_at  timestamptz not null default now()
);

-- The SMART callback must come back to the browser that pressed Connect: the SHA-256 of a random value
-- that browser holds in a cookie (api/connect/pages.ts). Attempts made before have none and are refused.
alter table connect_attempt add column browser_binding text;
