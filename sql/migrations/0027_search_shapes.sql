-- Search shapes (shared/fhir/search/index/shape.ts, issue 23): each live resource's full-text row (one
-- per resource) gets the shape of its index rows: its type's number (23 bits of the md5 of its name) then
-- 40 bits of a hash of the set of (parameter type, code) pairs it has rows for, keyed by (shape, rid) (a
-- type's shapes are one range), so that the resources lacking a parameter
-- (`:missing=true`, token `:not`) are found through the few shapes of their type rather than as every
-- resource of the type less that parameter's rows. The writers hash the set in their own way; rows
-- filled here hash it with md5: equal sets may then carry two shapes, which only makes one more to read.
alter table idx_fulltext add column shape bigint;
update idx_fulltext f set shape = ((('x' || left(md5(x.res_type), 6))::bit(24)::int >> 1)::bigint << 40)
  | ('x' || left(md5(coalesce(x.pairs, '')), 10))::bit(40)::bigint
from (select f0.rid, f0.res_type, k.pairs from idx_fulltext f0 left join (
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
create index idx_fulltext_shape on idx_fulltext (shape, rid);
