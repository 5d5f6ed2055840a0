// SearchQuery criteria -> SQL predicates over a resource row, as nested postgres.js fragments: every
// search value is a bound parameter. Each criterion becomes an EXISTS over its type's index table;
// chains and _has become subqueries over the target or source resources.
// https://hl7.org/fhir/R4/search.html
import type { Sql } from '../../../db/client'
import { join } from '../../../db/fragments'
import { comparisonPredicate } from './filter'
import { handlerFor } from '../types'
import type { Fragment, PredicateContext } from '../types'
import type { Criterion } from './query'
import { unescape } from '../escape'
import { codeMatch, compileLastUpdated, compileParam, once, paramRows, probe, type Scope, unsupported } from './param-sql'
import { patientTargetOf } from '../types/reference'

/**
 * True when the criteria hold a `_has`: its statement is then planned for its values (withCustomPlans).
 * On a generic plan PostgreSQL guesses one row everywhere and checks the source resources candidate by
 * candidate: `Patient?_has:Observation:patient:code=...&name=...` took 34 ms on Synthea x10, 7-11 ms on
 * a custom plan. Chains keep the generic plan: their candidates are read in rid order until the page
 * is full, which a custom plan gave up for worse guesses (`Observation?patient.birthdate=ge1990&code=`
 * 50 -> 94 ms, bench/search-complex.ts).
 */
export function needsCustomPlan(criteria: Criterion[]): boolean {
  return criteria.some(function nested(c: Criterion): boolean {
    switch (c.kind) {
      case 'has':
        return true
      case 'chain':
        return c.branches.some((b) => nested(b.inner))
      case 'or':
        return c.any.some(nested)
      case 'and':
        return c.all.some(nested)
      case 'not':
        return nested(c.inner)
      default:
        return false
    }
  })
}

export function compileCriteria(sql: Sql, criteria: Criterion[], scope: Scope, baseUrl: string): Fragment {
  if (criteria.length === 0) return sql`true`
  return join(
    sql,
    criteria.map((c) => compileCriterion(sql, c, scope, baseUrl)),
    sql` and `,
  )
}

type ParamCriterion = Extract<Criterion, { kind: 'param' }>

/**
 * The criteria of a one-type search. When two or more are positive criteria on index rows, one of them
 * (the likeliest to be selective) yields the candidate rids and the others are checked on those rids
 * before any resource row is read: `rid in (select c.rid from (<driver's rows>) c where <others on c>)`.
 * As separate EXISTS each, every candidate's resource row is read first, and only then are the others
 * checked (e.g. 55 Observations of a patient read to keep the 4 with a given code).
 */
export function compileMatch(sql: Sql, criteria: Criterion[], scope: Scope, baseUrl: string): Fragment {
  const driver = scope.probes ? undefined : referenceDriver(criteria, scope)
  if (!driver) return compileCriteria(sql, criteria, scope, baseUrl)
  const onRows = criteria.filter((c): c is ParamCriterion => isRowCriterion(c))
  const typed = { ...scope, type: scope.type as string }
  const byPatient = patientCodeDriver(onRows, driver, baseUrl)
  if (byPatient) return drive(sql, byPatient.token, byPatient.patient, onRows, criteria, typed, baseUrl)
  return drive(sql, driver, undefined, onRows, criteria, typed, baseUrl)
}

/**
 * The reference criterion compileMatch drives from, when a reference stands beside other criteria on
 * index rows (it names one resource: its rows are few): `subject=Patient/1&code=...`.
 */
export function referenceDriver(criteria: Criterion[], scope: Scope): ParamCriterion | undefined {
  const onRows = criteria.filter((c): c is ParamCriterion => isRowCriterion(c))
  const driver = onRows.find((c) => c.def.type === 'reference')
  if (scope.type === undefined || onRows.length < 2 || driver === undefined) return undefined
  return driver
}

/**
 * The positive criteria on index rows of a one-type search that may drive it, likeliest first (a
 * reference names one resource, a token one code; strings and URIs next; ranges last): bounded.ts
 * measures how many rows each matches, up to a budget, and drives from the fewest.
 */
export function driverCandidates(criteria: Criterion[]): DriverCriterion[] {
  // A chain or _has names the resources its inner criterion finds (often few): after a reference.
  // Each type ranks its own rows (types/<type>.ts driverRank): a reference names one resource, a token one
  // code; strings and URIs come next; ranges (dates, numbers, quantities) and composites last.
  // `_lastUpdated` is a range of the resources' own (res_type, last_updated) key: ranked as a date.
  const rank = (c: DriverCriterion) => (c.kind === 'param' ? (handlerFor(c.def.type)?.driverRank ?? 3) : 0.5)
  return criteria
    .filter((c): c is DriverCriterion => isRowCriterion(c) || isLastUpdated(c) || c.kind === 'chain' || c.kind === 'has')
    .sort((a, b) => rank(a) - rank(b))
}

// A `_lastUpdated` criterion: the rows it matches are one range of resource_type_updated. Left to a
// filter on the resources read in rid order, an empty range (`_lastUpdated=gt<today>`) read every
// resource of the type (177-306 ms on Synthea x10, bench/search-mix.ts).
const isLastUpdated = (c: Criterion): boolean => c.kind === 'param' && c.def.code === '_lastUpdated'

export type ChainCriterion = Extract<Criterion, { kind: 'chain' }>
export type HasCriterion = Extract<Criterion, { kind: 'has' }>
export type DriverCriterion = ParamCriterion | ChainCriterion | HasCriterion

/** The rids (`select rid ...`) of the resources of `type` a criterion that may drive matches. */
export function criterionRows(sql: Sql, c: DriverCriterion, type: string, baseUrl: string, targets?: Scope['targets']): Fragment {
  const scope = { alias: 'r0', type, depth: 0, targets }
  if (c.kind === 'chain')
    return sql`select i.rid from idx_reference i where i.res_type = ${type} and i.code = ${c.def.code} and (${chainTargets(sql, c, scope, baseUrl)})`
  // The targets' ids once, then each one's row by the (res_type, id) key: as `t.id in (...)`, a plan
  // guessing one row everywhere ran the whole _has subquery again for every resource of the type.
  if (c.kind === 'has')
    return sql`select t.rid from (select distinct x.target_id from (${hasTargets(sql, c, sql`${type}`, 0, baseUrl)}) x) ids
      cross join lateral (select t.rid from resource t where t.res_type = ${type} and t.id = ids.target_id and not t.deleted offset 0) t`
  if (isLastUpdated(c))
    return sql`select x.rid from resource x where x.res_type = ${type} and not x.deleted and ${compileLastUpdated(sql, c.modifier, c.values, sql('x'))}`
  const { table, match } = paramRows(sql, c.def, c.modifier, c.values, scope, baseUrl)
  return sql`select i.rid from ${sql(table)} i where i.res_type = ${type} and ${codeMatch(sql, c.def)} and (${match})`
}

// A chain's reference rows `i` point at a target of one of its types that matches that branch.
function chainTargets(sql: Sql, c: ChainCriterion, scope: Scope, baseUrl: string): Fragment {
  const branches = c.branches.map((b) => {
    const found = scope.targets?.get(b)
    const targets = sql`i.target_id in (${found ? sql`select t.id from ${found} t` : chainBranchTargets(sql, b, scope.depth, baseUrl)})`
    return sql`(i.target_type = ${b.type} and ${once(sql, targets, scope.probes)})`
  })
  return join(sql, branches, sql` or `)
}

/** The ids (`select id`) of the resources of one branch's type that meet its inner criterion, for a chain at `depth`. */
export function chainBranchTargets(sql: Sql, b: ChainCriterion['branches'][number], depth: number, baseUrl: string): Fragment {
  const inner = sql(`r${depth + 1}`)
  return sql`select ${inner}.id from resource ${inner}
      where ${inner}.res_type = ${b.type} and not ${inner}.deleted
        and ${compileCriterion(sql, b.inner, { alias: `r${depth + 1}`, type: b.type, depth: depth + 1 }, baseUrl)}`
}

// The ids of the resources of `targetType` that a `_has` source resource matching its criterion references.
function hasTargets(sql: Sql, c: HasCriterion, targetType: Fragment, depth: number, baseUrl: string): Fragment {
  const src = sql(`r${depth + 1}`)
  return sql`select h.target_id from idx_reference h join resource ${src} on ${src}.rid = h.rid
    where h.code = ${c.refCode} and h.target_type = ${targetType} and ${src}.res_type = ${c.sourceType} and not ${src}.deleted
      and ${compileCriterion(sql, c.inner, { alias: `r${depth + 1}`, type: c.sourceType, depth: depth + 1 }, baseUrl)}`
}

/**
 * A `_has` checked on the row at hand: its sources through the reference target key
 * (idx_reference_target), each checked until one matches. Hashed instead (found once), a common inner
 * criterion (`Encounter?_has:Observation:encounter:status=final`) read every final Observation and its
 * reference, 900,000 buffers, before the first Encounter; here a page of Encounters reads theirs.
 */
function hasProbe(sql: Sql, c: HasCriterion, scope: Scope & { type: string }, baseUrl: string): Fragment {
  const byPatient = patientHasProbe(sql, c, scope, baseUrl)
  if (byPatient) return byPatient
  const src = sql(`r${scope.depth + 1}`)
  const inner = compileCriterion(sql, c.inner, { alias: `r${scope.depth + 1}`, type: c.sourceType, depth: scope.depth + 1, probes: true }, baseUrl)
  return sql`exists (select 1 from idx_reference h join resource ${src} on ${src}.rid = h.rid
    where h.target_id = ${sql(scope.alias)}.id and h.target_type = ${scope.type} and h.code = ${c.refCode} and h.res_type = ${c.sourceType}
      and ${src}.res_type = ${c.sourceType} and not ${src}.deleted and ${inner} offset 0)`
}

/**
 * A `_has` on a Patient whose inner criterion is a code (`Patient?_has:Observation:subject:code=...`):
 * token rows carry the one Patient their resource references ('*' for several, types/token.ts), so a
 * Patient's sources with the code are one range of the token lookup (res_type, code, value, patient),
 * each then checked for the reference through the `_has` parameter; the sources that reference several
 * Patients are found once (hashed). Through the reference target key instead, each Patient's every
 * source was read and checked: 51 Observations a Patient, 15,700 buffers for a page (Synthea x10).
 */
function patientHasProbe(sql: Sql, c: HasCriterion, scope: Scope & { type: string }, baseUrl: string): Fragment | undefined {
  const inner = c.inner
  if (scope.type !== 'Patient' || inner.kind !== 'param' || inner.def.type !== 'token' || inner.modifier !== undefined || inner.def.common === 'column')
    return undefined
  const r = sql(scope.alias)
  const { match } = paramRows(sql, inner.def, inner.modifier, inner.values, { alias: 'r1', type: c.sourceType, depth: scope.depth + 1 }, baseUrl)
  const rows = sql`i.res_type = ${c.sourceType} and ${codeMatch(sql, inner.def)} and (${match})`
  const live = sql`exists (select 1 from resource s where s.rid = i.rid and s.res_type = ${c.sourceType} and not s.deleted offset 0)`
  const refersTo = (patient: Fragment) =>
    sql`exists (select 1 from idx_reference h where h.rid = i.rid and h.res_type = ${c.sourceType} and h.code = ${c.refCode}
      and h.target_id = ${patient} and h.target_type = 'Patient' offset 0)`
  const several = sql`${r}.id in (select h.target_id from idx_token i join idx_reference h on h.rid = i.rid
    where ${rows} and i.patient = '*' and h.res_type = ${c.sourceType} and h.code = ${c.refCode} and h.target_type = 'Patient' and ${live})`
  return sql`(exists (select 1 from idx_token i where ${rows} and i.patient = ${r}.id and ${refersTo(sql`${r}.id`)} and ${live} offset 0)
    or ${once(sql, several, true)})`
}

/**
 * The rids of a `_has`'s sources, read as a stream (no DISTINCT, no hash: a LIMIT stops it): the inner
 * criterion's own index rows when it can drive, else the source type in rid order, each checked.
 * bounded.ts counts them up to its budget to tell a few sources from many, then reads the targets of
 * the few (hasSourceTargets).
 */
export function hasSources(sql: Sql, c: HasCriterion, baseUrl: string): Fragment {
  const [driver] = driverCandidates([c.inner])
  if (driver) return criterionRows(sql, driver, c.sourceType, baseUrl)
  const check = compileCriterion(sql, c.inner, { alias: 'r1', type: c.sourceType, depth: 1, probes: true }, baseUrl)
  return sql`select r1.rid from resource r1 where r1.res_type = ${c.sourceType} and not r1.deleted and ${check}`
}

/**
 * The target ids (`target_id`, one per reference) of the sources `s` (rids), of a `_has` on `type`. A
 * reference row is a live resource's (a deleted version has no index rows, index-store.ts): the source
 * is not looked up (870 lookups, 2,610 of the 8,919 buffers of Patient?_has:Observation:subject:code=6690-2
 * on Synthea x10).
 */
export function hasSourceTargets(sql: Sql, c: HasCriterion, type: string, sources: Fragment): Fragment {
  return sql`select h.target_id from ${sources} cross join lateral (
    select h.target_id from idx_reference h
    where h.rid = s.rid and h.res_type = ${c.sourceType} and h.code = ${c.refCode} and h.target_type = ${type} offset 0) h`
}

/**
 * A reference to one Patient beside a code (`subject=Patient/1&code=...`): the token rows carry the
 * Patient their resource references (or '*' when it references several), so the code's rows of that
 * patient are one range of the token lookup index, and the reference is checked on those few rather
 * than the code on each of the patient's resources. A resource that references the patient through the
 * searched parameter references it, so its rows carry the patient or '*'.
 */
function patientCodeDriver(onRows: ParamCriterion[], driver: ParamCriterion, baseUrl: string): { token: ParamCriterion; patient: string } | undefined {
  if (driver.def.type !== 'reference' || driver.values.length !== 1) return undefined
  const patient = patientTargetOf(driver.values[0], driver.modifier, driver.def, baseUrl)
  const token = onRows.find((c) => c.def.type === 'token' && c.modifier === undefined)
  return patient !== undefined && token ? { token, patient } : undefined
}

function drive(
  sql: Sql,
  driver: ParamCriterion,
  patient: string | undefined,
  onRows: ParamCriterion[],
  criteria: Criterion[],
  scope: Scope & { type: string },
  baseUrl: string,
): Fragment {
  const type = scope.type
  const { table, match } = paramRows(sql, driver.def, driver.modifier, driver.values, scope, baseUrl)
  const rowsOf = (ofPatient: Fragment) =>
    sql`select i.rid from ${sql(table)} i where i.res_type = ${type} and ${codeMatch(sql, driver.def)} and (${match}) ${ofPatient}`
  // Two ranges of the lookup index: `patient in (x, '*')` would be a filter, not an index condition.
  const driverRows = patient === undefined ? rowsOf(sql``) : sql`${rowsOf(sql`and i.patient = ${patient}`)} union all ${rowsOf(sql`and i.patient = '*'`)}`
  // Each other criterion is a probe per candidate (OFFSET 0 keeps the EXISTS a subplan: joined instead,
  // a generic plan's row guesses could scan all rows of a code per candidate). It names every column,
  // res_type too, so that it is one descent of an index holding them all: the reference lookup ends
  // with rid, the token rid key starts with it (sql/migrations/0015_token_index_shape.sql).
  const nested = onRows
    .filter((c) => c !== driver)
    .map((c) => {
      const rows = paramRows(sql, c.def, c.modifier, c.values, scope, baseUrl)
      return sql`exists (select 1 from ${sql(rows.table)} i where i.rid = c.rid and i.res_type = ${type} and ${codeMatch(sql, c.def)} and (${rows.match}) offset 0)`
    })
  const rest = criteria.filter((c) => !onRows.includes(c as ParamCriterion))
  const candidates = sql`${sql(scope.alias)}.rid in (
    select c.rid from (${driverRows}) c
    where ${join(sql, nested, sql` and `)})`
  return rest.length === 0 ? candidates : sql`${candidates} and ${compileCriteria(sql, rest, scope, baseUrl)}`
}

/**
 * For a criterion answered as NOT EXISTS of index rows (`:missing=true`, a negating modifier such as
 * token `:not`), those rows' rids (`select i.rid ...`): the resources it excludes. bounded.ts reads a
 * sparse negation as the type's rids EXCEPT these (a hash or sort, never a loop over pairs).
 */
export function excludedRows(sql: Sql, c: Criterion, type: string, baseUrl: string): Fragment | undefined {
  if (c.kind === 'missing' && c.missing && c.def.common !== 'column' && handlerFor(c.def.type))
    return sql`select i.rid from ${sql(handlerFor(c.def.type)!.table)} i where i.res_type = ${type} and ${codeMatch(sql, c.def)}`
  if (c.kind !== 'param' || c.modifier === undefined || c.def.common === 'column' || c.def.code === '_id' || c.def.code === '_lastUpdated') return undefined
  const { table, match, negated } = paramRows(sql, c.def, c.modifier, c.values, { alias: 'r0', type, depth: 0 }, baseUrl)
  return negated ? sql`select i.rid from ${sql(table)} i where i.res_type = ${type} and ${codeMatch(sql, c.def)} and (${match})` : undefined
}

// A positive criterion answered by the parameter's own index rows of the resource (only `rid` read from the row).
function isRowCriterion(c: Criterion): boolean {
  if (c.kind !== 'param' || c.def.common === 'column' || c.def.code === '_id' || c.def.code === '_lastUpdated') return false
  const h = handlerFor(c.def.type)
  return h !== undefined && !(c.modifier !== undefined && h.negating?.has(c.modifier))
}

function compileCriterion(sql: Sql, c: Criterion, scope: Scope, baseUrl: string): Fragment {
  const r = sql(scope.alias)
  switch (c.kind) {
    case 'param':
      return compileParam(sql, c.def, c.modifier, c.values, scope, baseUrl)
    case 'missing': {
      if (c.def.common === 'column') return c.missing ? sql`false` : sql`true`
      const h = handlerFor(c.def.type)
      if (!h) throw unsupported(c.def)
      const exists = sql`exists (select 1 from ${sql(h.table)} i where i.rid = ${r}.rid and ${codeMatch(sql, c.def)} ${probe(sql, c.missing || scope.probes)})`
      return c.missing ? sql`not ${exists}` : exists
    }
    case 'chain':
      return sql`exists (select 1 from idx_reference i where i.rid = ${r}.rid and i.code = ${c.def.code} and (${chainTargets(sql, c, scope, baseUrl)}) ${probe(sql, scope.probes)})`
    case 'has':
      if (scope.probes && scope.type !== undefined) return hasProbe(sql, c, { ...scope, type: scope.type }, baseUrl)
      return once(
        sql,
        sql`${r}.id in (${hasTargets(sql, c, scope.type !== undefined ? sql`${scope.type}` : sql`${r}.res_type`, scope.depth, baseUrl)})`,
        scope.probes,
      )
    case 'or':
      return sql`(${join(
        sql,
        c.any.map((x) => compileCriterion(sql, x, scope, baseUrl)),
        sql` or `,
      )})`
    case 'compartment': {
      // One range of the reference lookup (target_id, target_type, code, res_type, rid) per parameter,
      // then the resource rows of those rids: an OR of one EXISTS per parameter could only be checked
      // on every resource of the type in turn.
      const types = scope.type !== undefined ? sql`and i.res_type = ${scope.type}` : sql``
      return sql`${r}.rid in (select i.rid from idx_reference i
        where i.target_id = ${c.id} and i.target_type = ${c.compartmentType} and i.code = any(${c.codes}::text[]) ${types})`
    }
    case 'and':
      return sql`(${join(
        sql,
        c.all.map((x) => compileCriterion(sql, x, scope, baseUrl)),
        sql` and `,
      )})`
    case 'not':
      return sql`not (${compileCriterion(sql, c.inner, scope, baseUrl)})`
    case 'compare': {
      const h = handlerFor(c.def.type)
      if (!h) throw unsupported(c.def)
      const ctx: PredicateContext = { def: c.def, resType: scope.type ?? '', baseUrl }
      const typeFilter = scope.type !== undefined ? sql`and i.res_type = ${scope.type}` : sql``
      return sql`exists (select 1 from ${sql(h.table)} i where i.rid = ${r}.rid ${typeFilter} and ${codeMatch(sql, c.def)} and (${comparisonPredicate(sql, h, c.op, c.value, ctx)}))`
    }
    case 'fulltext': {
      const col = sql(c.field)
      const matches = c.values.map((v) => sql`i.${col} @@ websearch_to_tsquery('simple', ${unescape(v)})`)
      return sql`exists (select 1 from idx_fulltext i where i.rid = ${r}.rid and (${join(sql, matches, sql` or `)}))`
    }
  }
}
