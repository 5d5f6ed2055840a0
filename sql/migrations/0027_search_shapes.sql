-- Search shapes (shared/fhir/search/index/shape.ts, issue 23): each live resource's full-text row (one
-- per resource) gets the shape of its index rows, the set of (parameter type, code) pairs it has rows
-- for, keyed by (res_type, shape, rid), so that the resources lacking a parameter (`:missing=true`, token
-- `:not`) are found through the few shapes of their type rather than as every resource of the type less
-- that parameter's rows. The writers hash the set in their own way; rows filled here hash it with md5
-- (prefixed 'm'): equal sets may then carry two shapes, which only makes one more shape to read.
alter table idx_fulltext add column shape text;
update idx_fulltext f set shape = 'm' || left(md5(coalesce(x.pairs, '')), 16)
from (select f0.rid, k.pairs from idx_fulltext f0 left join (
  select p.rid, string_agg(p.pair, ',' order by p.pair) as pairs
  from (
    select distinct rid, 'token.' || code as pair from idx_token
    union all select distinct rid, 'string.' || code from idx_string
    union all select distinct rid, 'reference.' || code from idx_reference
    union all select distinct rid, 'date.' || code from idx_date
    union all select distinct rid, 'number.' || code from idx_number
    union all select distinct rid, 'quantity.' || code from idx_quantity
    union all select distinct rid, 'uri.' || code from idx_uri
    union all select distinct rid, 'composite.' || code from idx_composite
  ) p
  group by p.rid
) k on k.rid = f0.rid) x
where x.rid = f.rid;
alter table idx_fulltext alter column shape set not null;
create index idx_fulltext_shape on idx_fulltext (res_type, shape, rid);
