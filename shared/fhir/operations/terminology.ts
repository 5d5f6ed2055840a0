// Terminology operations over the concept store: ValueSet/$expand, CodeSystem/$lookup,
// ValueSet/$validate-code and CodeSystem/$validate-code (scope read), and $reindex-terminology
// (scope admin), with HAPI FHIR 7.0's Parameters shapes.
// https://hl7.org/fhir/R4/terminology-service.html
import { AppError, invalid } from '../../errors'
import { startAdminJob } from '../../jobs/admin-job'
import { parseFhirJson } from '../format/json'
import type { FhirContext, FhirResponse } from '../request'
import { liveVersion } from '../resource-errors'
import { ensureBuiltinTerminology } from '../terminology/builtin'
import { expandDefinition, type Member } from '../terminology/compose'
import { ensureExpansion, expansionPage, memberPage } from '../terminology/expansion'
import { isAbstract, lookupConcept, conceptIn, type ConceptDetails } from '../terminology/lookup'
import { rebuildTerminology } from '../terminology/rebuild'
import { TERMINOLOGY_JOB_KIND } from '../terminology/rebuild-job'
import { codeSystemOfResource, findCodeSystem, findValueSet, valueSetOfResource, type ValueSetRef } from '../terminology/resolve'
import { type CodeToCheck, validateInCodeSystem, validateInMembers, validateInValueSet } from '../terminology/validate-code'
import { type OperationInput, type ParameterPart, parameters } from './params'
import type { OperationDef, OperationTarget } from './types'

const DEFAULT_EXPAND_COUNT = 1000
const MAX_EXPAND_COUNT = 10000

/** The current stored resource of an instance-level call (404 unknown, 410 deleted). */
async function storedTarget(ctx: Pick<FhirContext, 'repo'>, target: OperationTarget): Promise<{ rid: string; resource: any }> {
  const [type, id] = [target.type as string, target.id as string]
  const stored = liveVersion(await ctx.repo.read(type, id), type, id)
  return { rid: stored.rid, resource: parseFhirJson(stored.content as string) }
}

/** The value set an operation is about: the instance, an inline `valueSet`, or `url` (+ `valueSetVersion`). */
async function targetValueSet(
  ctx: Pick<FhirContext, 'repo'>,
  target: OperationTarget,
  input: OperationInput,
  op: string,
): Promise<{ resource: any; cached?: ValueSetRef; url: string }> {
  const sql = ctx.repo.sql
  if (target.level === 'instance') {
    const { rid, resource } = await storedTarget(ctx, target)
    return { resource, cached: await valueSetOfResource(sql, rid), url: resource.url ?? `ValueSet/${target.id}` }
  }
  const inline = input.resourceOf('valueSet')
  if (inline) {
    if (inline.resourceType !== 'ValueSet') throw invalid(`Parameter "valueSet" of ${op} must be a ValueSet`)
    return { resource: inline, url: inline.url ?? 'inline ValueSet' }
  }
  const url = input.string('url') ?? input.string('context')
  if (!url) throw invalid(`${op} at the type level (no ID specified) requires a url or a valueSet as a part of the request`)
  const cached = await findValueSet(sql, url.split('|')[0], input.string('valueSetVersion') ?? url.split('|')[1])
  if (!cached) throw new AppError('not-found', `HAPI-2024: Unknown ValueSet: ${encodeURIComponent(url)}`)
  return { resource: cached.definition, cached, url }
}

function nonNegative(input: OperationInput, name: string, fallback: number, max?: number): number {
  const n = input.integer(name) ?? fallback
  if (n < 0) throw invalid(`Parameter "${name}" must not be negative`)
  return max === undefined ? n : Math.min(n, max)
}

// https://hl7.org/fhir/R4/valueset-operation-expand.html
async function expand(ctx: Pick<FhirContext, 'repo'>, target: OperationTarget, input: OperationInput): Promise<FhirResponse> {
  const sql = ctx.repo.sql
  await ensureBuiltinTerminology(sql)
  const vs = await targetValueSet(ctx, target, input, '$expand')
  const opts = {
    filter: input.string('filter'),
    offset: nonNegative(input, 'offset', 0),
    count: nonNegative(input, 'count', DEFAULT_EXPAND_COUNT, MAX_EXPAND_COUNT),
  }
  let page: { total: number; contains: Member[] }
  if (vs.cached) {
    const state = await ensureExpansion(sql, vs.cached)
    if (state.error) throw invalid(`Unable to expand ValueSet ${vs.url}: ${state.error}`)
    page = await expansionPage(sql, vs.cached.id, opts)
  } else {
    page = memberPage(await expandOrFail(ctx, vs.resource, vs.url), opts)
  }
  const parameter: ParameterPart[] = [
    { name: 'offset', valueInteger: opts.offset },
    { name: 'count', valueInteger: opts.count },
  ]
  if (opts.filter) parameter.push({ name: 'filter', valueString: opts.filter })
  const { text: _text, expansion: _old, ...rest } = vs.resource
  const expansion: any = {
    identifier: `urn:uuid:${crypto.randomUUID()}`,
    timestamp: new Date().toISOString(),
    total: page.total,
    offset: opts.offset,
    parameter,
  }
  if (page.contains.length > 0) expansion.contains = page.contains.map(codingOf)
  return { status: 200, resource: { ...rest, resourceType: 'ValueSet', expansion } }
}

async function expandOrFail(ctx: Pick<FhirContext, 'repo'>, resource: any, url: string): Promise<Member[]> {
  try {
    return await expandDefinition(ctx.repo.sql, resource, new Set(resource.url ? [resource.url] : []))
  } catch (err) {
    if (err instanceof AppError && err.category === 'invalid') throw invalid(`Unable to expand ValueSet ${url}: ${err.message}`)
    throw err
  }
}

const codingOf = (m: { system: string; version: string | null; code: string; display: string | null }) => ({
  system: m.system,
  ...(m.version ? { version: m.version } : {}),
  code: m.code,
  ...(m.display !== null ? { display: m.display } : {}),
})

/** The codes to check: code (+ system, display), a coding, or each coding of a codeableConcept. */
function codesOf(input: OperationInput, op: string, defaultSystem?: string): CodeToCheck[] {
  const code = input.string('code')
  if (code) return [{ code, system: input.string('system') ?? defaultSystem, display: input.string('display') }]
  const coding = input.value('coding') as any
  if (coding && typeof coding === 'object' && typeof coding.code === 'string')
    return [{ code: coding.code, system: coding.system, display: coding.display ?? input.string('display') }]
  const concept = input.value('codeableConcept') as any
  const codings = Array.isArray(concept?.coding) ? concept.coding.filter((c: any) => typeof c?.code === 'string') : []
  if (codings.length > 0) return codings.map((c: any) => ({ code: c.code, system: c.system, display: c.display }))
  throw invalid(`No code, coding, or codeableConcept provided to validate (${op})`)
}

function validationAnswer(r: { result: boolean; message?: string; display?: string }): FhirResponse {
  const parts: ParameterPart[] = [{ name: 'result', valueBoolean: r.result }]
  if (r.message) parts.push({ name: 'message', valueString: r.message })
  if (r.display) parts.push({ name: 'display', valueString: r.display })
  return { status: 200, resource: parameters(...parts) }
}

// https://hl7.org/fhir/R4/valueset-operation-validate-code.html
async function validateValueSetCode(ctx: Pick<FhirContext, 'repo'>, target: OperationTarget, input: OperationInput): Promise<FhirResponse> {
  const sql = ctx.repo.sql
  await ensureBuiltinTerminology(sql)
  const codes = codesOf(input, '$validate-code')
  const vs = await targetValueSet(ctx, target, input, '$validate-code')
  if (vs.cached) return validationAnswer(await validateInValueSet(sql, vs.cached, codes))
  return validationAnswer(validateInMembers(await expandOrFail(ctx, vs.resource, vs.url), codes, vs.url))
}

// https://hl7.org/fhir/R4/codesystem-operation-validate-code.html
async function validateCodeSystemCode(ctx: Pick<FhirContext, 'repo'>, target: OperationTarget, input: OperationInput): Promise<FhirResponse> {
  const sql = ctx.repo.sql
  await ensureBuiltinTerminology(sql)
  const [c] = codesOf(input, '$validate-code', input.string('url'))
  let cs = undefined
  let url = input.string('url') ?? c.system
  if (target.level === 'instance') {
    const { rid, resource } = await storedTarget(ctx, target)
    cs = await codeSystemOfResource(sql, rid)
    url = resource.url
  } else if (url) cs = await findCodeSystem(sql, url, input.string('version'))
  if (!url) throw invalid('$validate-code at the type level requires a url (or a coding with a system)')
  if (!cs) return validationAnswer({ result: false, message: `CodeSystem is unknown and can't be validated: ${url}` })
  return validationAnswer(await validateInCodeSystem(sql, cs, c))
}

// https://hl7.org/fhir/R4/codesystem-operation-lookup.html
async function lookup(ctx: Pick<FhirContext, 'repo'>, target: OperationTarget, input: OperationInput): Promise<FhirResponse> {
  const sql = ctx.repo.sql
  await ensureBuiltinTerminology(sql)
  const coding = input.value('coding') as any
  const code = input.string('code') ?? (typeof coding?.code === 'string' ? coding.code : undefined)
  let system = input.string('system') ?? (typeof coding?.system === 'string' ? coding.system : undefined)
  const version = input.string('version') ?? (typeof coding?.version === 'string' ? coding.version : undefined)
  let concept: ConceptDetails | undefined
  if (target.level === 'instance') {
    const { rid, resource } = await storedTarget(ctx, target)
    system = resource.url
    const cs = await codeSystemOfResource(sql, rid)
    if (!code) throw invalid('No code, coding, or codeableConcept provided to lookup')
    concept = cs ? await conceptIn(sql, cs, code) : undefined
  } else {
    if (!code || !system) throw invalid('$lookup requires a code and a system, or a coding')
    concept = await lookupConcept(sql, system, code, version)
  }
  if (!concept) throw new AppError('not-found', `Unable to find code[${code}] in system[${system}]`)
  const wanted = new Set(input.values('property').map(String))
  const parts: ParameterPart[] = []
  if (concept.codeSystem.name) parts.push({ name: 'name', valueString: concept.codeSystem.name })
  if (concept.codeSystem.version) parts.push({ name: 'version', valueString: concept.codeSystem.version })
  parts.push({ name: 'display', valueString: concept.display ?? '' })
  parts.push({ name: 'abstract', valueBoolean: isAbstract(concept) })
  const property = (name: string, value: Record<string, unknown>) => {
    if (wanted.size === 0 || wanted.has(name))
      parts.push({
        name: 'property',
        part: [
          { name: 'code', valueCode: name },
          { name: 'value', ...value },
        ],
      } as ParameterPart)
  }
  for (const p of concept.property) {
    const key = Object.keys(p ?? {}).find((k) => k.startsWith('value'))
    if (typeof p?.code === 'string' && key) property(p.code, { [key]: p[key] })
  }
  for (const parent of concept.parents) property('parent', { valueCode: parent.code })
  for (const child of concept.children) property('child', { valueCode: child.code })
  for (const d of concept.designation) {
    const part: ParameterPart[] = []
    if (d?.language) part.push({ name: 'language', valueCode: d.language })
    if (d?.use) part.push({ name: 'use', valueCoding: d.use })
    if (d?.value) part.push({ name: 'value', valueString: d.value })
    parts.push({ name: 'designation', part } as ParameterPart)
  }
  return { status: 200, resource: parameters(...parts) }
}

// HAPI answers Parameters `success` (with `message` when it did not run). Here the rebuild runs as an
// admin job (kind reindex-terminology; `jobId` says which, for /admin/jobs/{id}); without job queues
// (inside a Bundle worker) it runs at once.
async function reindexTerminology(ctx: Pick<FhirContext, 'repo' | 'jobs'>): Promise<FhirResponse> {
  if (ctx.jobs) {
    const job = await startAdminJob(ctx.repo.sql, ctx.jobs, TERMINOLOGY_JOB_KIND, {}, TERMINOLOGY_JOB_KIND)
    return { status: 200, resource: parameters({ name: 'success', valueBoolean: true }, { name: 'jobId', valueString: job.id }) }
  }
  try {
    await rebuildTerminology(ctx.repo.sql, undefined, { wait: false })
  } catch (err) {
    if (err instanceof AppError && err.category === 'busy')
      return { status: 200, resource: parameters({ name: 'success', valueBoolean: false }, { name: 'message', valueString: err.message }) }
    throw err
  }
  return { status: 200, resource: parameters({ name: 'success', valueBoolean: true }) }
}

export const operations: OperationDef[] = [
  {
    name: '$expand',
    levels: ['type', 'instance'],
    methods: ['GET', 'POST'],
    scope: 'read',
    types: ['ValueSet'],
    handler: (_r, ctx, t, i) => expand(ctx, t, i),
  },
  {
    name: '$lookup',
    levels: ['type', 'instance'],
    methods: ['GET', 'POST'],
    scope: 'read',
    types: ['CodeSystem'],
    handler: (_r, ctx, t, i) => lookup(ctx, t, i),
  },
  {
    name: '$validate-code',
    levels: ['type', 'instance'],
    methods: ['GET', 'POST'],
    scope: 'read',
    types: ['ValueSet'],
    handler: (_r, ctx, t, i) => validateValueSetCode(ctx, t, i),
  },
  {
    name: '$validate-code',
    levels: ['type', 'instance'],
    methods: ['GET', 'POST'],
    scope: 'read',
    types: ['CodeSystem'],
    handler: (_r, ctx, t, i) => validateCodeSystemCode(ctx, t, i),
  },
  { name: '$reindex-terminology', levels: ['system'], methods: ['POST'], scope: 'admin', handler: (_r, ctx) => reindexTerminology(ctx) },
]
