// EXPLAIN (ANALYZE, BUFFERS) of the statements a search runs for its first page, as the server plans
// them (generic plans, or custom ones where search asks for them): to compare plan designs by what they
// read rather than by wall-clock time on a shared machine (issue 23).
//
// Usage: bun run bench/search-explain.ts <database url> 'Type?query' ['Type?query'...] [--summary]
//        bun run bench/search-explain.ts <database url> --mix [category regex] [--seed 23] [--queries 2000]
//   --summary: one line per search, the shared buffers (hit + read) of its statements and their time.
//   --mix: the queries of bench/search-mix.ts's mix (categories matching the regex), each summarised,
//   then per category the buffers' p50/p95/max and the 5 heaviest queries.
import postgres from 'postgres'
import { searchStatements } from '../tests/plans'
import { generateMix } from './search-mix-queries'

function literal(v: unknown): string {
  if (v === null || v === undefined) return 'null'
  if (Array.isArray(v)) return literal(`{${v.map((x) => (x === null ? 'NULL' : `"${String(x).replace(/["\\]/g, '\\$&')}"`)).join(',')}}`)
  if (v instanceof Date) return literal(v.toISOString())
  return `'${String(v).replace(/'/g, "''")}'`
}

/** The plans of `path`'s first-page statements, run, and the buffers they touched in all. */
export async function explainSearch(url: string, path: string): Promise<{ buffers: number; ms: number; plans: string[][] }> {
  const { statements, custom } = await searchStatements(url, path, 60_000)
  const sql = postgres(url, { max: 1, onnotice: () => {}, types: {}, connection: { jit: 'off' } as Record<string, string> })
  const out = { buffers: 0, ms: 0, plans: [] as string[][] }
  try {
    for (const st of statements) {
      if (st.query.includes('resource_count')) continue
      const lines = await sql.begin(async (tx) => {
        await tx.unsafe(`set local plan_cache_mode = ${custom ? 'force_custom_plan' : 'force_generic_plan'}`)
        await tx.unsafe(`prepare explain_check as ${st.query}`)
        const a = st.params.length > 0 ? `(${st.params.map(literal).join(', ')})` : ''
        const rows = await tx.unsafe(`explain (analyze, buffers) execute explain_check${a}`)
        await tx.unsafe('deallocate explain_check')
        return rows.map((r: any) => r['QUERY PLAN'] as string)
      })
      const top = lines.find((l) => /Buffers:/.test(l)) ?? ''
      out.buffers += Number(/hit=(\d+)/.exec(top)?.[1] ?? 0) + Number(/read=(\d+)/.exec(top)?.[1] ?? 0)
      out.ms += Number(/Execution Time: ([\d.]+)/.exec(lines.find((l) => l.startsWith('Execution Time')) ?? '')?.[1] ?? 0)
      out.plans.push(lines)
    }
    return out
  } finally {
    await sql.end()
  }
}

if (import.meta.main) {
  const args = process.argv.slice(2)
  const option = (name: string, dflt: string) => {
    const i = args.indexOf(`--${name}`)
    return i >= 0 ? args[i + 1] : dflt
  }
  const url = args[0]
  if (args.includes('--mix')) {
    const i = args.indexOf('--mix')
    const pattern = new RegExp(args[i + 1] && !args[i + 1].startsWith('--') ? args[i + 1] : '.')
    const sql = postgres(url, { max: 1, onnotice: () => {} })
    const mix = (await generateMix(sql as any, Number(option('seed', '23')), Number(option('queries', '2000')))).filter((q) => pattern.test(q.category))
    await sql.end()
    const by = new Map<string, { path: string; buffers: number; ms: number }[]>()
    for (const q of mix) {
      const r = await explainSearch(url, q.path).catch(() => ({ buffers: Number.NaN, ms: Number.NaN }))
      const list = by.get(q.category) ?? by.set(q.category, []).get(q.category)!
      list.push({ path: q.path, buffers: r.buffers, ms: r.ms })
    }
    const pct = (xs: number[], p: number) => xs[Math.min(xs.length - 1, Math.ceil((p / 100) * xs.length) - 1)]
    for (const [cat, list] of [...by].sort()) {
      const b = list.map((x) => x.buffers).sort((x, y) => x - y)
      console.log(`${cat.padEnd(18)} n ${String(list.length).padStart(4)}  buffers p50 ${pct(b, 50)} p95 ${pct(b, 95)} max ${b[b.length - 1]}`)
      for (const x of [...list].sort((p, q) => q.buffers - p.buffers).slice(0, 5))
        console.log(`    ${String(x.buffers).padStart(8)}  ${x.ms.toFixed(1).padStart(8)} ms  ${x.path}`)
    }
  } else {
    for (const path of args.slice(1).filter((a) => !a.startsWith('--'))) {
      const r = await explainSearch(url, path)
      if (args.includes('--summary')) console.log(`${String(r.buffers).padStart(8)} buffers ${r.ms.toFixed(1).padStart(8)} ms  ${path}`)
      else console.log(`== ${path}\n${r.plans.map((p) => p.join('\n')).join('\n--\n')}`)
    }
  }
}
