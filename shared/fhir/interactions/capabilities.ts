// capabilities: GET /metadata, a CapabilityStatement of what this server does, built once per base URL.
// https://hl7.org/fhir/R4/http.html#capabilities  https://hl7.org/fhir/R4/capabilitystatement.html
// As HAPI's JpaCapabilityStatementProvider: per type its search parameters, _include and _revinclude
// values, and conditional create/update/delete (shared/notes/hapi-behaviour.md §1.6).
import { BULK_DATA_CAPABILITY, bulkOperations } from '../../bulk/capabilities'
import { resourceTypes } from '../definitions/resource-types'
import { allOperations } from '../operations'
import type { OperationDef } from '../operations/types'
import type { FhirContext, FhirResponse } from '../request'
import { handlerFor } from '../search/types'
import { type SearchParamDef, searchParamsFor } from '../search/registry'

const TYPE_INTERACTIONS = ['read', 'vread', 'update', 'patch', 'delete', 'history-instance', 'history-type', 'create', 'search-type']
const SYSTEM_INTERACTIONS = ['search-system', 'history-system']

/** Parameter types the search engine serves (`special` only for `_has` and `_list`). */
const SEARCHABLE_TYPES = new Set(['string', 'token', 'reference', 'uri', 'date', 'number', 'quantity', 'composite'])
const SPECIAL_CODES = new Set(['_has', '_list'])
/** In the registry but not served per type: `_type` is for system search; `_filter` and `_query` are not implemented. */
const NOT_LISTED = new Set(['_type', '_filter', '_query'])

// About 1 MB and a few hundred ms to build: kept, with its JSON text, for the last base URL asked.
let cached: { key: string; statement: any; text: string } | undefined

export function capabilities(ctx: Pick<FhirContext, 'baseUrl'>): FhirResponse {
  if (cached?.key !== ctx.baseUrl) {
    const statement = build(ctx)
    cached = { key: ctx.baseUrl, statement, text: JSON.stringify(statement) }
  }
  return { status: 200, resource: cached.statement, text: cached.text }
}

function build(ctx: Pick<FhirContext, 'baseUrl'>): any {
  const types = resourceTypes()
  const revIncludes = revIncludesByTarget(types)
  return {
    resourceType: 'CapabilityStatement',
    status: 'active',
    date: new Date().toISOString(),
    publisher: 'fhir-platform',
    kind: 'instance',
    software: { name: 'fhir-platform', version: '0.1.0' },
    implementation: { description: 'FHIR R4 resource server', url: ctx.baseUrl },
    fhirVersion: '4.0.1',
    instantiates: [BULK_DATA_CAPABILITY],
    format: ['application/fhir+json', 'application/fhir+xml'],
    patchFormat: ['application/fhir+json', 'application/fhir+xml', 'application/json-patch+json'],
    rest: [
      {
        mode: 'server',
        security: {
          description: 'Every request carries `Authorization: Bearer <API key>`; keys have read, write, admin and export (Bulk Data $export) scopes.',
        },
        resource: types.map((type) => {
          const params = listedParams(type)
          return {
            type,
            profile: `http://hl7.org/fhir/StructureDefinition/${type}`,
            interaction: TYPE_INTERACTIONS.map((code) => ({ code })),
            versioning: 'versioned-update',
            readHistory: true,
            updateCreate: true,
            conditionalCreate: true,
            conditionalUpdate: true,
            conditionalDelete: 'single',
            searchInclude: ['*', ...params.filter((d) => d.type === 'reference').map((d) => `${type}:${d.code}`)],
            searchRevInclude: ['*', ...(revIncludes.get(type) ?? [])],
            searchParam: params.map((d) => searchParamEntry(type, d)),
            operation: [
              ...operationsOf(
                allOperations().filter((o) => o.levels.some((l) => l !== 'system') && (!o.types || o.types.includes(type))),
                type,
              ),
              ...bulkOperations(type),
            ],
          }
        }),
        interaction: SYSTEM_INTERACTIONS.map((code) => ({ code })),
        operation: [...operationsOf(allOperations().filter((o) => o.levels.includes('system'))), ...bulkOperations()],
      },
    ],
  }
}

// Operations defined by the FHIR specification; the others are HAPI's.
const STANDARD_OPERATIONS: Record<string, string> = {
  validate: 'Resource-validate',
  meta: 'Resource-meta',
  'meta-add': 'Resource-meta-add',
  'meta-delete': 'Resource-meta-delete',
  everything: 'Patient-everything',
  expand: 'ValueSet-expand',
  lookup: 'CodeSystem-lookup',
  'validate-code': 'ValueSet-validate-code',
}

/** The operations entries (one per name) with the canonical of their OperationDefinition. */
function operationsOf(ops: OperationDef[], type?: string): { name: string; definition: string }[] {
  const names = [...new Set(ops.map((o) => o.name.slice(1)))].sort()
  return names.map((name) => {
    const standard = STANDARD_OPERATIONS[name]
    const definition = standard
      ? `http://hl7.org/fhir/OperationDefinition/${name === 'validate-code' && type === 'CodeSystem' ? 'CodeSystem-validate-code' : standard}`
      : `http://hapifhir.io/fhir/OperationDefinition/${name}`
    return { name, definition }
  })
}

/** The parameters of `type` a search can use, by code. */
function listedParams(type: string): SearchParamDef[] {
  return [...searchParamsFor(type).values()]
    .filter((d) => !NOT_LISTED.has(d.code) && (SEARCHABLE_TYPES.has(d.type) || SPECIAL_CODES.has(d.code)))
    .sort((a, b) => (a.code < b.code ? -1 : a.code > b.code ? 1 : 0))
}

/** `Source:param` for every reference parameter (of any type, this one included) that can point at each type. */
function revIncludesByTarget(types: readonly string[]): Map<string, string[]> {
  const out = new Map<string, string[]>(types.map((t) => [t, []]))
  for (const source of types) {
    for (const d of listedParams(source)) {
      if (d.type !== 'reference') continue
      const targets = d.targets.length > 0 ? d.targets : types
      for (const t of targets) out.get(t)?.push(`${source}:${d.code}`)
    }
  }
  for (const list of out.values()) list.sort()
  return out
}

function searchParamEntry(type: string, d: SearchParamDef): any {
  const description = descriptionFor(type, d.description)
  const modifiers = `Modifiers: ${modifiersOf(d)}.`
  return {
    name: d.code,
    definition: d.url,
    type: d.type,
    documentation: description ? `${description}${/[.!?]$/.test(description) ? '' : '.'} ${modifiers}` : modifiers,
  }
}

// A description shared by several types reads "Multiple Resources: * [Observation](observation.html): The code..."
// keep this type's line.
function descriptionFor(type: string, description: string | undefined): string | undefined {
  if (!description) return undefined
  if (!description.startsWith('Multiple Resources')) return description.trim()
  const line = description.split(/\r?\n/).find((l) => l.startsWith(`* [${type}](`))
  return line ? line.slice(line.indexOf('):') + 2).trim() : undefined
}

/** The modifiers the search engine accepts for a parameter, as the search handlers and compile.ts define them. */
function modifiersOf(d: SearchParamDef): string {
  if (d.code === '_id') return ':not, :missing'
  if (d.code === '_lastUpdated') return ':missing'
  if (d.common === 'fulltext' || d.type === 'special' || d.type === 'composite') return 'none'
  const accepted = [...(handlerFor(d.type)?.modifiers ?? [])].map((m) => `:${m}`)
  if (d.type === 'reference') return [':[type]', ...accepted, ':missing'].join(', ') + '; chaining (param.child=value, param:[type].child=value) up to 3 links'
  return [...accepted, ':missing'].join(', ')
}
