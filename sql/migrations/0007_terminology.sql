-- Terminology: a concept store fed by the R4 CodeSystems and ValueSets of the definitions package
-- (built-in rows, rid null, loaded once on first use) and by those stored through the FHIR API (rid of
-- the stored resource; replaced in the same statement as each write, removed with the resource).
-- A URL may have several rows: stored ones win over built-in ones, newer over older.

create table term_code_system (
  id bigint generated always as identity primary key,
  url text not null,
  version text,
  name text,
  content text,
  rid bigint references resource (rid) on delete cascade
);
create index term_code_system_url on term_code_system (url);
create index term_code_system_rid on term_code_system (rid) where rid is not null;

create table term_concept (
  cs_id bigint not null references term_code_system (id) on delete cascade,
  code text not null,
  -- the concept's position in its code system (expansions list concepts in definition order)
  ord int not null,
  display text,
  -- [{language, use: Coding, value}] and [{code, value[x]}] as in CodeSystem.concept
  designation jsonb,
  property jsonb,
  primary key (cs_id, code)
);

-- The transitive closure of the is-a hierarchy, with each concept its own ancestor at depth 0, so that
-- :below / :above / is-a filters are one indexed lookup. depth 1 = direct parent.
create table term_closure (
  cs_id bigint not null references term_code_system (id) on delete cascade,
  ancestor text not null,
  descendant text not null,
  depth int not null,
  primary key (cs_id, ancestor, descendant)
);
create index term_closure_up on term_closure (cs_id, descendant, depth);

create table term_value_set (
  id bigint generated always as identity primary key,
  url text not null,
  version text,
  name text,
  rid bigint references resource (rid) on delete cascade,
  -- the ValueSet without narrative: compose (and expansion, for the few given expanded)
  definition jsonb not null,
  -- the terminology generation the cached expansion was computed at (null: never expanded)
  expanded_generation bigint,
  expansion_error text,
  total int
);
create index term_value_set_url on term_value_set (url);
create index term_value_set_rid on term_value_set (rid) where rid is not null;

-- The cached expansion of a value set, in expansion order.
create table term_expansion (
  vs_id bigint not null references term_value_set (id) on delete cascade,
  ord int not null,
  system text not null,
  version text,
  code text not null,
  display text,
  primary key (vs_id, ord)
);
create index term_expansion_code on term_expansion (vs_id, code, system);

-- One row: `generation` grows with every CodeSystem/ValueSet write (cached expansions of an older
-- generation are recomputed on use); `builtin_loaded_at` marks the built-in load as done.
create table term_state (
  singleton boolean primary key default true check (singleton),
  generation bigint not null default 1,
  builtin_loaded_at timestamptz
);
insert into term_state default values;
