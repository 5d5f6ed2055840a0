// TypeBox models of the patient API's request bodies (also the OpenAPI document's schemas), and the one
// check that turns the first mismatch into a 400 naming the parameter: a missing or unknown field is
// bad_request, a value of the wrong type invalid_data.
import { Kind, type Static, type TSchema, Type } from '@sinclair/typebox'
import { ValueErrorType } from '@sinclair/typebox/errors'
import { Value } from '@sinclair/typebox/value'
import { badRequest, invalidData } from '../../shared/patients/api-error'

const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()])
// Values are checked by the domain rule (patient-fields.ts), which names the offending key.
const Metadata = Type.Record(Type.String(), Type.Unknown(), {
  description: 'Client-defined key/value data: at most 50 keys of up to 40 characters; values strings (up to 500), numbers, booleans or null',
})

export const PatientBody = Type.Object(
  {
    patient_id: Type.String({ minLength: 1, maxLength: 200, description: 'Your own patient identifier, unique in your organization' }),
    email: Type.Optional(Nullable(Type.String({ format: 'email' }))),
    name: Type.Optional(Nullable(Type.String({ maxLength: 200 }))),
    metadata: Type.Optional(Nullable(Metadata)),
  },
  { additionalProperties: false },
)
export type PatientBody = Static<typeof PatientBody>

export const FlowBody = Type.Object(
  {
    patient_id: Type.String({ minLength: 1, maxLength: 200, description: 'Creates the patient if needed' }),
    patient_email: Type.Optional(Nullable(Type.String({ format: 'email' }))),
    patient_name: Type.Optional(Nullable(Type.String({ maxLength: 200 }))),
    connection_id: Type.Optional(Nullable(Type.String({ description: 'Direct mode: a fhirsrc_ id or FHIR base URL; excludes recommended_connection_ids' }))),
    recommended_connection_ids: Type.Optional(Nullable(Type.Array(Type.String(), { description: 'Picker mode: fhirsrc_ ids shown first' }))),
    return_url: Type.String({ format: 'uri' }),
    return_button_label: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 60 }))),
    expires_in: Type.Optional(Type.Integer({ minimum: 60, maximum: 86400, default: 1800, description: 'Seconds until expires_at' })),
    metadata: Type.Optional(Nullable(Metadata)),
  },
  { additionalProperties: false },
)
export type FlowBody = Static<typeof FlowBody>

export const OrganizationBody = Type.Object({ name: Type.String({ minLength: 1, maxLength: 200 }) }, { additionalProperties: false })

export const ApiKeyBody = Type.Object(
  { label: Type.Optional(Type.String({ maxLength: 200 })), version: Type.Optional(Type.String({ description: 'API version the key pins' })) },
  { additionalProperties: false },
)

const FhirSourceFields = {
  name: Type.String({ minLength: 1, maxLength: 200 }),
  type: Type.Optional(Nullable(Type.String({ description: 'Kind of source system, e.g. epic, cerner' }))),
  fhir_base_url: Type.String({ format: 'uri' }),
  logo_url: Type.Optional(Nullable(Type.String({ format: 'uri' }))),
  portal_url: Type.Optional(Nullable(Type.String({ format: 'uri' }))),
  client_id: Type.Optional(Nullable(Type.String({ description: 'SMART client id (never returned)' }))),
  client_secret: Type.Optional(Nullable(Type.String({ description: 'SMART client secret (never returned)' }))),
  scopes: Type.Optional(Nullable(Type.String({ description: 'SMART scopes to request, space-separated (never returned)' }))),
}
export const FhirSourceBody = Type.Object(FhirSourceFields, { additionalProperties: false })
export const FhirSourcePatch = Type.Partial(Type.Object(FhirSourceFields), { additionalProperties: false })

/**
 * The body checked against `schema`. Formats (email, uri) are left to the domain rules, which name the
 * parameter the same way; here only structure and types.
 */
export function parseBody<S extends TSchema>(schema: S, body: unknown): Static<S> {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw badRequest('The request body must be a JSON object')
  for (const e of Value.Errors(schema, body)) {
    if (e.type === ValueErrorType.StringFormat || e.type === ValueErrorType.StringFormatUnknown) continue
    const param = e.path.replace(/^\//, '').replace(/\//g, '.') || null
    if (e.type === ValueErrorType.ObjectRequiredProperty) throw badRequest(`Missing required parameter: ${param}`, param ?? undefined)
    if (e.type === ValueErrorType.ObjectAdditionalProperties) throw badRequest(`Received unknown parameter: ${param}`, param ?? undefined)
    if (param === null) throw badRequest(`Invalid request body: ${e.message}`)
    throw invalidData(param, `Invalid ${param}: expected ${expected(e.schema)}, got ${described(e.value)}`)
  }
  return body as Static<S>
}

/** What a schema accepts, in words (`a string of 1-60 characters or null`), for validation messages. */
export function expected(schema: TSchema): string {
  const kind = schema[Kind] as string
  if (kind === 'Union') return (schema.anyOf as TSchema[]).map(expected).join(' or ')
  if (kind === 'Null') return 'null'
  if (kind === 'String') {
    if (schema.format === 'email') return 'an email address'
    if (schema.format === 'uri') return 'an http(s) URL'
    return `a string${range(schema.minLength, schema.maxLength, ' characters')}`
  }
  if (kind === 'Integer') return `an integer${range(schema.minimum, schema.maximum, '').replace(' of ', ' from ')}`
  if (kind === 'Number') return `a number${range(schema.minimum, schema.maximum, '').replace(' of ', ' from ')}`
  if (kind === 'Boolean') return 'true or false'
  if (kind === 'Array') return `an array of ${expected(schema.items as TSchema).replace(/^an? /, '')}s`.replace(/ss$/, 's')
  if (kind === 'Record' || kind === 'Object') return 'a JSON object'
  return kind.toLowerCase()
}

function range(min: number | undefined, max: number | undefined, unit: string): string {
  if (min !== undefined && max !== undefined) return ` of ${min} to ${max}${unit}`
  if (max !== undefined) return ` of at most ${max}${unit}`
  if (min !== undefined) return ` of at least ${min}${unit}`
  return ''
}

function described(v: unknown): string {
  if (v === null) return 'null'
  if (Array.isArray(v)) return 'an array'
  if (typeof v === 'string') return `a ${v.length}-character string`
  if (typeof v === 'object') return 'an object'
  return `${typeof v} ${JSON.stringify(v)}`
}
