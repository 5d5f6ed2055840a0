-- Resources: the current version of every resource (deleted ones stay as tombstones), and every
-- earlier version in resource_history. Each version's content is written once: an update moves the
-- current row into history and replaces it.

-- Server-assigned ids come from this sequence; each process reserves blocks of 100 (HAPI-style pooled ids).
create sequence resource_rid_seq increment by 100 start with 100;

create table resource (
  rid           bigint primary key,
  res_type      text not null,
  id            text not null,
  version       integer not null,
  last_updated  timestamptz not null,
  deleted       boolean not null default false,
  content       text, -- the JSON resource as served; null when deleted
  unique (res_type, id)
);
create index resource_type_updated on resource (res_type, last_updated, rid);
create index resource_updated on resource (last_updated, rid);

create table resource_history (
  rid           bigint not null,
  version       integer not null,
  res_type      text not null,
  id            text not null,
  last_updated  timestamptz not null,
  deleted       boolean not null default false,
  content       text,
  primary key (rid, version)
);
create index resource_history_type_updated on resource_history (res_type, last_updated, rid);
create index resource_history_updated on resource_history (last_updated, rid);

-- API keys of the FHIR server: only the SHA-256 of the key is stored.
create table api_key (
  id          bigint generated always as identity primary key,
  key_hash    text not null unique,
  prefix      text not null,
  label       text not null,
  scopes      text[] not null,
  created_at  timestamptz not null default now(),
  revoked_at  timestamptz
);
