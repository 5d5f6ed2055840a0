-- Token `:text` (starts-with on the display text, issue 23): a key on the text of the rows that have one.
-- Without it each `:text` criterion read every row of its code (Observation?code:text=...: the code rows
-- of every Observation, 179 ms at p95 in bench/search-mix.ts on Synthea x10). text_pattern_ops: the
-- predicate is a range in code point order (types/string.ts startsWith), which a generic plan can use.
create index idx_token_text on idx_token (res_type, code, text_norm text_pattern_ops) where text_norm is not null;
-- The rid key again after it: a probe of one candidate that names res_type and code (compile.ts drive)
-- ties the two on a generic plan, and the planner keeps the index it considers last (as in 0015).
drop index idx_token_rid;
create index idx_token_rid on idx_token (rid, res_type, code, value, system);
