// The query generator of bench/search-mix.ts: a seeded random mix of searches drawn from the loaded
// data. Resources are picked at random (by rid), and each query is built from one picked resource's own
// index rows, so that it names values that exist: every parameter type, modifiers (:not, :missing,
// :contains, :exact, :text), prefixes, chains, _has, _include/_revinclude, _sort, _total=accurate.
import type { Sql } from '../shared/db/client'
import { searchParamFor } from '../shared/fhir/search/registry'

export interface MixQuery {
  category: string
  /** Path under /fhir, e.g. `Observation?code=...`. */
  path: string
}

/** mulberry32: a small seeded generator, the same sequence for the same seed. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

interface Picked {
  rid: string
  type: string
  id: string
  token: { code: string; system: string | null; value: string | null; text: string | null }[]
  string: { code: string; value: string }[]
  reference: { code: string; targetType: string | null; targetId: string | null }[]
  date: { code: string; loDay: string; lo: string }[]
  quantity: { code: string; value: string; system: string | null; unitCode: string | null }[]
  composite: { code: string; value1: string | null; lo2: string | null; hi2: string | null }[]
}

/** `n` resources picked at random (seeded) with their index rows. */
async function pick(sql: Sql, rnd: () => number, n: number): Promise<Picked[]> {
  const [{ lo, hi }] = await sql<{ lo: string; hi: string }[]>`select min(rid)::text as lo, max(rid)::text as hi from resource`
  const span = Number(hi) - Number(lo) + 1
  const rids = [...new Set(Array.from({ length: n }, () => String(Number(lo) + Math.floor(rnd() * span))))]
  const rows = await sql<{ rid: string; type: string; id: string }[]>`
    select rid::text, res_type as type, id from resource where rid = any(${rids}::bigint[]) and not deleted order by rid`
  const by = new Map<string, Picked>(rows.map((r) => [r.rid, { ...r, token: [], string: [], reference: [], date: [], quantity: [], composite: [] }]))
  const ids = [...by.keys()]
  const add = <K extends keyof Picked>(k: K, list: any[]) => {
    for (const r of list) (by.get(r.rid)?.[k] as any[] | undefined)?.push(r)
  }
  add(
    'token',
    await sql`select rid::text, code, system, value, text_norm as text from idx_token where rid = any(${ids}::bigint[]) order by rid, code, value, system`,
  )
  add('string', await sql`select rid::text, code, value_exact as value from idx_string where rid = any(${ids}::bigint[]) order by rid, code, value_exact`)
  add(
    'reference',
    await sql`select rid::text, code, target_type as "targetType", target_id as "targetId" from idx_reference where rid = any(${ids}::bigint[]) order by rid, code, target_type, target_id`,
  )
  add(
    'date',
    await sql`select rid::text, code, lo_day::text as "loDay", to_char(lo at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') as lo
      from idx_date where rid = any(${ids}::bigint[]) and lo > '1800-01-01' order by rid, code, lo`,
  )
  add(
    'quantity',
    await sql`select rid::text, code, value::text, system, unit_code as "unitCode" from idx_quantity where rid = any(${ids}::bigint[]) and value is not null order by rid, code, value`,
  )
  add(
    'composite',
    await sql`select rid::text, code, value1, lo2::text, hi2::text from idx_composite where rid = any(${ids}::bigint[]) order by rid, code, value1, lo2`,
  )
  return [...by.values()]
}

const enc = encodeURIComponent

/** The mix: `count` queries from resources picked with `seed`. */
export async function generateMix(sql: Sql, seed: number, count: number): Promise<MixQuery[]> {
  const rnd = seeded(seed)
  const one = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]
  const picked = await pick(sql, rnd, Math.max(600, Math.ceil(count / 2)))
  const valid = (type: string, code: string) => searchParamFor(type, code) !== undefined
  const ofType = (type: string) => picked.filter((p) => p.type === type)
  // Every value each (type, token code) takes among the picked resources, for :not with several codes.
  const tokenValues = new Map<string, Set<string>>()
  for (const p of picked)
    for (const t of p.token)
      if (t.value) (tokenValues.get(`${p.type} ${t.code}`) ?? tokenValues.set(`${p.type} ${t.code}`, new Set()).get(`${p.type} ${t.code}`)!).add(t.value)
  const prefixes = ['eq', 'ne', 'gt', 'lt', 'ge', 'le', 'sa', 'eb', 'ap'] as const
  const precisions = (day: string) => [day.slice(0, 4), day.slice(0, 7), day]
  const patientOf = (p: Picked) => p.reference.find((r) => r.targetType === 'Patient' && r.targetId)?.targetId

  const makers: [string, number, (p: Picked) => string | undefined, ((p: Picked) => boolean)?][] = [
    [
      'token',
      10,
      (p) => {
        const t = one(p.token.filter((x) => x.value && valid(p.type, x.code)))
        return t && `${p.type}?${t.code}=${rnd() < 0.5 && t.system ? enc(`${t.system}|${t.value}`) : enc(t.value!)}`
      },
    ],
    [
      'token:not',
      6,
      (p) => {
        const t = one(p.token.filter((x) => x.value && valid(p.type, x.code)))
        if (!t) return undefined
        const others = [...(tokenValues.get(`${p.type} ${t.code}`) ?? [])]
        const values = rnd() < 0.5 ? [t.value!] : [...new Set([t.value!, one(others), one(others)])]
        return `${p.type}?${t.code}:not=${values.map(enc).join(',')}`
      },
    ],
    [
      'token:text',
      2,
      (p) => {
        const t = one(p.token.filter((x) => x.text && valid(p.type, x.code)))
        return t && `${p.type}?${t.code}:text=${enc(one(t.text!.split(/\s+/).filter((w) => w.length > 2)) ?? t.text!)}`
      },
    ],
    [
      ':missing',
      4,
      (p) => {
        const rows = [...p.token, ...p.reference, ...p.date, ...p.string].filter((x) => valid(p.type, x.code))
        const c = one(rows)
        return c && `${p.type}?${c.code}:missing=${rnd() < 0.5}`
      },
    ],
    [
      'string',
      6,
      (p) => {
        const s = one(p.string.filter((x) => valid(p.type, x.code) && x.value.length > 2))
        return s && `${p.type}?${s.code}=${enc(s.value.slice(0, 3 + Math.floor(rnd() * 4)))}`
      },
      (p) => p.string.length > 0,
    ],
    [
      'string:exact',
      2,
      (p) => {
        const s = one(p.string.filter((x) => valid(p.type, x.code)))
        return s && `${p.type}?${s.code}:exact=${enc(s.value)}`
      },
      (p) => p.string.length > 0,
    ],
    [
      'string:contains',
      3,
      (p) => {
        const s = one(p.string.filter((x) => valid(p.type, x.code) && x.value.length > 4))
        if (!s) return undefined
        const at = Math.floor(rnd() * (s.value.length - 3))
        return `${p.type}?${s.code}:contains=${enc(s.value.slice(at, at + 3))}`
      },
      (p) => p.string.length > 0,
    ],
    [
      'reference',
      8,
      (p) => {
        const r = one(p.reference.filter((x) => x.targetId && x.targetType && valid(p.type, x.code)))
        return r && `${p.type}?${r.code}=${enc(rnd() < 0.5 ? `${r.targetType}/${r.targetId}` : r.targetId!)}`
      },
    ],
    [
      'date',
      10,
      (p) => {
        const d = one(p.date.filter((x) => valid(p.type, x.code)))
        if (!d) return undefined
        const prefix = rnd() < 0.3 ? '' : one(prefixes)
        const value = rnd() < 0.1 ? d.lo : one(precisions(d.loDay))
        return `${p.type}?${d.code}=${prefix}${enc(value)}`
      },
    ],
    [
      'date+token',
      5,
      (p) => {
        const d = one(p.date.filter((x) => valid(p.type, x.code)))
        const t = one(p.token.filter((x) => x.value && valid(p.type, x.code) && x.code !== '_tag'))
        return d && t ? `${p.type}?${d.code}=${one(['lt', 'gt', 'ge', 'le'])}${d.loDay.slice(0, 4)}&${t.code}=${enc(t.value!)}` : undefined
      },
    ],
    [
      'quantity',
      5,
      (p) => {
        const q = one(p.quantity.filter((x) => valid(p.type, x.code)))
        if (!q) return undefined
        const prefix = rnd() < 0.5 ? '' : one(prefixes)
        const unit = rnd() < 0.3 && q.unitCode ? `|${q.system ?? ''}|${q.unitCode}` : ''
        return `${p.type}?${q.code}=${prefix}${enc(`${Number(q.value)}${unit}`)}`
      },
    ],
    [
      'composite',
      2,
      (p) => {
        const c = one(p.composite.filter((x) => x.value1 && valid(p.type, x.code)))
        if (!c) return undefined
        const second = c.lo2 !== null ? `${one(['', 'gt', 'lt'])}${Number(c.lo2)}` : undefined
        return second && `${p.type}?${c.code}=${enc(`${c.value1}$${second}`)}`
      },
    ],
    [
      'chain',
      5,
      (p) => {
        const r = one(p.reference.filter((x) => x.targetType === 'Patient' && valid(p.type, x.code)))
        const patient = one(ofType('Patient'))
        if (!r || !patient) return undefined
        const family = patient.string.find((s) => s.code === 'family')?.value
        const birth = patient.date.find((d) => d.code === 'birthdate')?.loDay
        const inner = one([family && `name=${enc(family)}`, birth && `birthdate=ge${birth.slice(0, 4)}`, `gender=${one(['female', 'male'])}`].filter(Boolean))
        const extra = rnd() < 0.5 ? (p.token.find((t) => t.code === 'code' && t.value)?.value ?? '') : ''
        return `${p.type}?${r.code}:Patient.${inner}${extra ? `&code=${enc(extra)}` : ''}`
      },
    ],
    [
      '_has',
      4,
      (p) => {
        const r = one(p.reference.filter((x) => x.targetId && x.targetType && ['patient', 'subject', 'encounter'].includes(x.code)))
        const t = one(p.token.filter((x) => x.value && x.code !== '_tag' && valid(p.type, x.code)))
        if (!r || !t || !r.targetType) return undefined
        return `${r.targetType}?_has:${p.type}:${r.code}:${t.code}=${enc(t.value!)}`
      },
    ],
    [
      '_include',
      4,
      (p) => {
        const r = one(p.reference.filter((x) => x.targetId && x.targetType && valid(p.type, x.code)))
        const patient = patientOf(p)
        if (!r) return undefined
        const by = patient && p.type !== 'Patient' && valid(p.type, 'patient') ? `patient=${patient}` : `_id=${p.id}`
        return `${p.type}?${by}&_include=${p.type}:${r.code}`
      },
    ],
    [
      '_revinclude',
      3,
      (p) => {
        const r = one(p.reference.filter((x) => x.targetId && x.targetType && valid(p.type, x.code)))
        if (!r || !r.targetType) return undefined
        return `${r.targetType}?_id=${enc(r.targetId!)}&_revinclude=${p.type}:${r.code}`
      },
    ],
    [
      '_sort',
      5,
      (p) => {
        const t = one(p.token.filter((x) => x.value && x.code !== '_tag' && valid(p.type, x.code)))
        const d = one(p.date.filter((x) => valid(p.type, x.code)))
        const key = one([d ? `${rnd() < 0.5 ? '-' : ''}${d.code}` : '-_lastUpdated', '_lastUpdated', '-_lastUpdated', '_id'])
        return t && `${p.type}?${t.code}=${enc(t.value!)}&_sort=${key}`
      },
    ],
    [
      '_total',
      4,
      (p) => {
        const t = one(p.token.filter((x) => x.value && valid(p.type, x.code)))
        const r = one(p.reference.filter((x) => x.targetId && valid(p.type, x.code)))
        const c = rnd() < 0.5 && r ? `${r.code}=${enc(r.targetId!)}` : t ? `${t.code}=${enc(t.value!)}` : undefined
        return c && `${p.type}?${c}&_total=accurate`
      },
    ],
    [
      '_id/_lastUpdated',
      2,
      (p) => (rnd() < 0.5 ? `${p.type}?_id=${enc(p.id)}` : `${p.type}?_lastUpdated=${one(['gt', 'lt', 'ge', 'le'])}${new Date().toISOString().slice(0, 10)}`),
    ],
    [
      'reference+token',
      5,
      (p) => {
        const patient = patientOf(p)
        const t = one(p.token.filter((x) => x.value && x.code !== '_tag' && valid(p.type, x.code)))
        const code = p.reference.find((r) => r.targetId === patient && valid(p.type, r.code))?.code
        return patient && t && code ? `${p.type}?${code}=${enc(patient)}&${t.code}=${enc(t.value!)}` : undefined
      },
    ],
  ]
  // Types Synthea leaves without number and uri values: searches that find nothing, still planned.
  const empty = [
    'RiskAssessment?probability=gt0.5',
    'ValueSet?url=http://example.org/vs',
    'MolecularSequence?variant-start=ge100',
    'Observation?_profile=http://example.org/p',
  ]
  const total = makers.reduce((a, m) => a + m[1], 0)
  const out: MixQuery[] = []
  for (let guard = 0; out.length < count && guard < count * 50; guard++) {
    if (rnd() < 0.01) {
      out.push({ category: 'number/uri', path: one(empty) })
      continue
    }
    let w = rnd() * total
    const maker = makers.find((m) => (w -= m[1]) < 0) ?? makers[0]
    const from = one(maker[3] ? picked.filter(maker[3]) : picked)
    const path = from && maker[2](from)
    if (path) out.push({ category: maker[0], path })
  }
  return out
}
