// EXPLAIN (ANALYZE, BUFFERS) of the statements a search runs for its first page, as the server plans
// them (generic plans, or custom ones where search asks for them): to compare plan designs by what they
// read rather than by wall-clock time on a shared machine (issue 23).
//
// Usage: bun run bench/search-explain.ts <database url> 'Type?query' ['Type?query'...] [--summary]
//        bun run bench/search-explain.ts <database url> --mix [category regex] [--seed 23] [--queries 2000]
//   --summary: one line per search, the shared buffers (hit + read) of its statements, the rows their
//   scans read (tests/plans.ts searchCost) and their time.
//   --mix: the queries of bench/search-mix.ts's mix (categories matching the regex), each summarised,
//   then per category the buffers' p50/p95/max and the 5 heaviest queries.
import postgres from 'postgres'
import { searchCost } from '../tests/plans'
import { generateMix } from './search-mix-queries'

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
    const by = new Map<string, { path: string; buffers: number; rows: number; ms: number }[]>()
    for (const q of mix) {
      const r = await searchCost(url, q.path).catch(() => ({ buffers: Number.NaN, rows: Number.NaN, ms: Number.NaN }))
      const list = by.get(q.category) ?? by.set(q.category, []).get(q.category)!
      list.push({ path: q.path, buffers: r.buffers, rows: r.rows, ms: r.ms })
    }
    const pct = (xs: number[], p: number) => xs[Math.min(xs.length - 1, Math.ceil((p / 100) * xs.length) - 1)]
    for (const [cat, list] of [...by].sort()) {
      const b = list.map((x) => x.buffers).sort((x, y) => x - y)
      console.log(`${cat.padEnd(18)} n ${String(list.length).padStart(4)}  buffers p50 ${pct(b, 50)} p95 ${pct(b, 95)} max ${b[b.length - 1]}`)
      for (const x of [...list].sort((p, q) => q.buffers - p.buffers).slice(0, 5))
        console.log(`    ${String(x.buffers).padStart(8)} buffers ${String(x.rows).padStart(8)} rows ${x.ms.toFixed(1).padStart(8)} ms  ${x.path}`)
    }
  } else {
    for (const path of args.slice(1).filter((a) => !a.startsWith('--'))) {
      const r = await searchCost(url, path, { text: !args.includes('--summary') })
      if (args.includes('--summary'))
        console.log(`${String(r.buffers).padStart(8)} buffers ${String(r.rows).padStart(8)} rows ${r.ms.toFixed(1).padStart(8)} ms  ${path}`)
      else console.log(`== ${path}\n${r.plans.map((p) => p.join('\n')).join('\n--\n')}`)
    }
  }
}
