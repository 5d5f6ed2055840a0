// What each search index costs a write, and what keys of another shape would: the rows of a loaded
// database's token and reference tables copied into a bare table of the same columns, with no index and then
// with each index alone (its marginal cost), and with the alternatives below; a checkpoint before each copy
// (full-page images as after any checkpoint), the best of `rounds`. The copy is one INSERT ... SELECT, not
// the import's COPY, and each index is alone: a measure of its share, not the import's time.
// The alternatives key on 64-bit hashes as HAPI FHIR's index tables do (HASH_IDENTITY, HASH_VALUE ...): a
// B-tree insert compares its new key with some 20-30 others, and a text column's compare (a function call,
// a detoast, a memcmp, each column after a text one found by walking the tuple) costs several times an
// integer's. Usage: bun run bench/index-insert-cost.ts <database URL of a loaded database> [rounds=2]
//   e.g. BENCH_DB=imp_look bun run bench/bulk-import.ts 10 --first-only, then
//        bun run bench/index-insert-cost.ts postgres://postgres@127.0.0.1:5432/imp_look
import { createSql } from '../shared/db/client'

const url = process.argv[2]
const rounds = Number(process.argv[3] ?? 2)
if (!url) throw new Error('usage: bun run bench/index-insert-cost.ts <database URL> [rounds]')
const sql = createSql(url, { max: 1 })

/** The hash columns the alternatives key on, computed once into the source (not part of any cost). */
const HASHED: Record<string, string> = {
  idx_token: `hashtextextended(res_type || '|' || code || '|' || coalesce(value, ''), 0) as h_value,
    hashtextextended(coalesce(patient, ''), 0) as h_patient`,
  idx_reference: `hashtextextended(coalesce(target_type, '') || '/' || coalesce(target_id, ''), 0) as h_target,
    hashtextextended(res_type || '|' || code, 0) as h_param`,
}
const ALTERNATIVES: Record<string, string[]> = {
  idx_token: [
    '(h_value, h_patient)',
    '(rid, h_value)',
    '(h_value, rid)',
    // the hash computed by PostgreSQL as the index's expression at each insert, not stored by the writer
    "(hashtextextended(res_type || '|' || code || '|' || value, 0), rid)",
    '(value, res_type, code, patient, system)',
  ],
  idx_reference: ['(h_target, h_param, rid)', '(rid, h_param, h_target)'],
}
/** Whether an alternative keys on the hash columns (the other: the text lookup key, its most selective column first). */
const isHashed = (cols: string) => /h_|hashtext/.test(cols)

const fmt = (n: number) => n.toFixed(2)

try {
  const resources = Number((await sql`select count(*)::int as n from resource`)[0].n)
  console.log(`${resources.toLocaleString('en-US')} resources; µs per row (and per resource) of each index alone, best of ${rounds}`)
  for (const table of Object.keys(HASHED)) {
    await sql.unsafe(`drop table if exists bench_src; drop table if exists bench_dst`)
    await sql.unsafe(`create table bench_src as select *, ${HASHED[table]} from ${table}`)
    await sql.unsafe(`create table bench_dst (like bench_src)`)
    const rows = Number((await sql`select count(*)::int as n from bench_src`)[0].n)
    const copy = async (): Promise<number> => {
      let best = Number.POSITIVE_INFINITY
      for (let r = 0; r < rounds; r++) {
        await sql.unsafe('truncate bench_dst')
        await sql.unsafe('checkpoint')
        const t0 = performance.now()
        await sql.unsafe('insert into bench_dst select * from bench_src')
        best = Math.min(best, performance.now() - t0)
      }
      return best
    }
    const bare = await copy()
    console.log(`${table}: ${rows.toLocaleString('en-US')} rows; the table alone ${fmt((bare * 1000) / rows)} µs a row`)
    const current = await sql<{ name: string; def: string }[]>`
      select c.relname as name, pg_get_indexdef(c.oid) as def
      from pg_index x join pg_class c on c.oid = x.indexrelid where x.indrelid = ${table}::regclass order by c.relname`
    const shapes = [
      ...current.map((i) => ({ label: i.name, ddl: i.def.replace(/^CREATE (UNIQUE )?INDEX \S+ ON \S+/, 'create index bench_i on bench_dst') })),
      ...ALTERNATIVES[table].map((cols) => ({
        label: `${isHashed(cols) ? 'hash-keyed' : 'reordered'} ${cols}`,
        ddl: `create index bench_i on bench_dst ${cols}`,
      })),
    ]
    for (const s of shapes) {
      await sql.unsafe(s.ddl)
      const ms = (await copy()) - bare
      console.log(`  ${s.label}: ${fmt((ms * 1000) / rows)} µs a row, ${fmt((ms * 1000) / resources)} a resource`)
      await sql.unsafe('drop index bench_i')
    }
  }
} finally {
  await sql.unsafe(`drop table if exists bench_src; drop table if exists bench_dst`)
  await sql.end()
}
