// The statements a search runs and the plans PostgreSQL makes for them, as the server plans them
// (generic plans on the pool's prepared statements; custom ones where search asks for them). Used by
// the plan tests (fhir-search-plans.test.ts) and by bench/search-mix.ts to print the slowest shapes.
import postgres from 'postgres'
import { needsCustomPlan } from '../shared/fhir/search/query/compile'
import { parseSearch } from '../shared/fhir/search/query/parse'
import { SearchQueries } from '../shared/fhir/search/query/queries'

export interface Statement {
  query: string
  params: unknown[]
}

export interface PlanNode {
  'Node Type': string
  'Join Type'?: string
  'Relation Name'?: string
  'Index Name'?: string
  Alias?: string
  'Plan Rows': number
  'Subplan Name'?: string
  'Parent Relationship'?: string
  Plans?: PlanNode[]
}

/**
 * The statements of the first page of `path` (`Type?query`) on the database at `url`, run in this
 * process by the server's own search code; each is cut off after `timeoutMs` (its text is known by then).
 */
export async function searchStatements(url: string, path: string, timeoutMs = 5000): Promise<{ statements: Statement[]; custom: boolean }> {
  const [type, qs = ''] = path.split('?')
  const statements: Statement[] = []
  const sql = postgres(url, {
    max: 1,
    onnotice: () => {},
    types: {},
    connection: { application_name: 'plan-check', plan_cache_mode: 'force_generic_plan', statement_timeout: timeoutMs } as Record<string, number | string>,
    debug: (_c: unknown, query: string, params: unknown[]) => {
      // not the client's own type lookup, nor transaction control
      if (!/^\s*(begin|commit|rollback|set )/i.test(query) && !query.includes('pg_catalog.pg_type')) statements.push({ query, params })
    },
  })
  try {
    const q = parseSearch([type], new URLSearchParams(qs), { defaultCount: 20, maxCount: 1000 })
    await new SearchQueries(() => sql as any).page(q, 'http://localhost/fhir').catch(() => undefined)
    return { statements, custom: needsCustomPlan(q.criteria) }
  } finally {
    await sql.end()
  }
}

/** A parameter as an SQL literal (its type inferred from where it stands, as for the server's). */
function literal(v: unknown): string {
  if (v === null || v === undefined) return 'null'
  if (Array.isArray(v)) return literal(`{${v.map((x) => (x === null ? 'NULL' : `"${String(x).replace(/["\\]/g, '\\$&')}"`)).join(',')}}`)
  if (v instanceof Date) return literal(v.toISOString())
  return `'${String(v).replace(/'/g, "''")}'`
}

/** The plan PostgreSQL uses for `st`: the generic plan of the prepared statement, or with `custom` one for its values. */
export async function planOf(url: string, st: Statement, custom: boolean): Promise<PlanNode> {
  const sql = postgres(url, { max: 1, onnotice: () => {}, types: {} })
  try {
    return await sql.begin(async (tx) => {
      await tx.unsafe(`set local plan_cache_mode = ${custom ? 'force_custom_plan' : 'force_generic_plan'}`)
      await tx.unsafe(`prepare plan_check as ${st.query}`)
      const args = st.params.length > 0 ? `(${st.params.map(literal).join(', ')})` : ''
      const [row] = await tx.unsafe(`explain (format json) execute plan_check${args}`)
      await tx.unsafe('deallocate plan_check')
      return (row['QUERY PLAN'] as any)[0].Plan as PlanNode
    })
  } finally {
    await sql.end()
  }
}

/**
 * What the first page of `path` reads, run as the server plans it: the shared buffers (hit + read)
 * of its statements and the rows their scans return or filter out (every loop), with each statement's
 * plan as text. Counts, not timings: the plan tests compare them with what a linear shape reads.
 */
export async function searchCost(
  url: string,
  path: string,
  opts: { text?: boolean; timeoutMs?: number } = {},
): Promise<{ buffers: number; rows: number; ms: number; plans: string[][] }> {
  const { statements, custom } = await searchStatements(url, path, opts.timeoutMs ?? 60_000)
  const sql = postgres(url, { max: 1, onnotice: () => {}, types: {}, connection: { jit: 'off' } as Record<string, string> })
  const out = { buffers: 0, rows: 0, ms: 0, plans: [] as string[][] }
  try {
    for (const st of statements) {
      // the per-type sizes (query/type-sizes.ts), read every few seconds, not per search
      if (/^\s*select res_type, sum\(n\)/.test(st.query)) continue
      const run = (format: string) =>
        sql.begin(async (tx) => {
          await tx.unsafe(`set local plan_cache_mode = ${custom ? 'force_custom_plan' : 'force_generic_plan'}`)
          await tx.unsafe(`prepare cost_check as ${st.query}`)
          const args = st.params.length > 0 ? `(${st.params.map(literal).join(', ')})` : ''
          const rows = await tx.unsafe(`explain (analyze, buffers${format}) execute cost_check${args}`)
          await tx.unsafe('deallocate cost_check')
          return rows
        })
      const [json] = await run(', format json')
      const top = (json['QUERY PLAN'] as any)[0]
      out.buffers += (top.Plan['Shared Hit Blocks'] ?? 0) + (top.Plan['Shared Read Blocks'] ?? 0)
      out.ms += top['Execution Time'] ?? 0
      out.rows += planNodes(top.Plan).reduce((n, p: any) => (/Scan$/.test(p['Node Type']) && p['Relation Name'] ? n + scanned(p) : n), 0)
      if (opts.text) out.plans.push((await run('')).map((r: any) => r['QUERY PLAN'] as string))
    }
    return out
  } finally {
    await sql.end()
  }
}

/** The largest number of rows any scan of an index matching `index` returned in one loop, in the plans of `path`'s first page. */
export async function widestScan(url: string, path: string, index: RegExp): Promise<number> {
  const { plans } = await searchCost(url, path, { text: true })
  let widest = 0
  for (const line of plans.flat()) {
    const m = /(?:Index (?:Only )?Scan using|Bitmap Index Scan on) (\S+) .*actual time=\S+ rows=(\d+) loops=1\b/.exec(line)
    if (m && index.test(m[1])) widest = Math.max(widest, Number(m[2]))
  }
  return widest
}

// Rows a scan node produced or threw away, over all its loops.
function scanned(p: any): number {
  return ((p['Actual Rows'] ?? 0) + (p['Rows Removed by Filter'] ?? 0) + (p['Rows Removed by Index Recheck'] ?? 0)) * (p['Actual Loops'] ?? 1)
}

/** Every node of a plan, depth first. */
export function planNodes(p: PlanNode): PlanNode[] {
  return [p, ...(p.Plans ?? []).flatMap(planNodes)]
}

/** A plan in one line: `Limit (21) > Nested Loop Anti (1) [Seq Scan resource r0 (5000), ...]`. */
export function planShape(p: PlanNode): string {
  const name = [
    p['Node Type'] === 'Nested Loop' || p['Node Type'].endsWith('Join')
      ? `${p['Node Type']}${p['Join Type'] && p['Join Type'] !== 'Inner' ? ` ${p['Join Type']}` : ''}`
      : p['Node Type'],
  ]
  if (p['Index Name']) name.push(p['Index Name'])
  else if (p['Relation Name']) name.push(`${p['Relation Name']}${p.Alias && p.Alias !== p['Relation Name'] ? ` ${p.Alias}` : ''}`)
  const self = `${name.join(' ')} (${p['Plan Rows']})`
  const kids = p.Plans ?? []
  if (kids.length === 0) return self
  if (kids.length === 1) return `${self} > ${planShape(kids[0])}`
  return `${self} [${kids.map(planShape).join(', ')}]`
}
