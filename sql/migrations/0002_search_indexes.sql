-- Search indexes: one table per search-parameter type, rows of current versions only, written in the
-- same transaction as the version (replaced on update, removed on delete). `code` is the parameter code,
-- `res_type` the type of the indexed resource (most lookups start from it).

create table idx_string (
  rid bigint not null, res_type text not null, code text not null,
  value_norm text not null, value_exact text not null
);
create index idx_string_lookup on idx_string (res_type, code, value_norm text_pattern_ops);
create index idx_string_rid on idx_string (rid);

create table idx_token (
  rid bigint not null, res_type text not null, code text not null,
  system text, value text, text_norm text
);
create index idx_token_lookup on idx_token (res_type, code, value, system);
create index idx_token_rid on idx_token (rid);

create table idx_reference (
  rid bigint not null, res_type text not null, code text not null,
  target_type text, target_id text, target_version text, url text,
  identifier_system text, identifier_value text
);
create index idx_reference_target on idx_reference (target_id, target_type, code, res_type);
create index idx_reference_url on idx_reference (url) where url is not null;
create index idx_reference_rid on idx_reference (rid);

create table idx_date (
  rid bigint not null, res_type text not null, code text not null,
  lo timestamptz not null, hi timestamptz not null
);
create index idx_date_lookup on idx_date (res_type, code, lo, hi);
create index idx_date_rid on idx_date (rid);

create table idx_number (
  rid bigint not null, res_type text not null, code text not null,
  value numeric, lo numeric, hi numeric
);
create index idx_number_lookup on idx_number (res_type, code, value);
create index idx_number_rid on idx_number (rid);

create table idx_quantity (
  rid bigint not null, res_type text not null, code text not null,
  value numeric, lo numeric, hi numeric, system text, unit_code text, unit text
);
create index idx_quantity_lookup on idx_quantity (res_type, code, value);
create index idx_quantity_rid on idx_quantity (rid);

create table idx_uri (
  rid bigint not null, res_type text not null, code text not null,
  value text not null
);
create index idx_uri_lookup on idx_uri (res_type, code, value);
create index idx_uri_rid on idx_uri (rid);

-- Composite parameters of two components (HAPI supports only two): the first a token, the second one of
-- token, string, quantity, number, date or uri, in the columns of its kind.
create table idx_composite (
  rid bigint not null, res_type text not null, code text not null,
  system1 text, value1 text,
  system2 text, value2 text, lo2 numeric, hi2 numeric, unit2 text, dlo2 timestamptz, dhi2 timestamptz
);
create index idx_composite_lookup on idx_composite (res_type, code, value1);
create index idx_composite_rid on idx_composite (rid);

-- _text (narrative) and _content (all text of the resource), on PostgreSQL's own full-text search.
create table idx_fulltext (
  rid bigint not null, res_type text not null,
  narrative tsvector not null, content tsvector not null
);
create index idx_fulltext_rid on idx_fulltext (rid);
create index idx_fulltext_narrative on idx_fulltext using gin (narrative);
create index idx_fulltext_content on idx_fulltext using gin (content);
