// The OpenAPI 3.1 document of the Patient Connection API (GET /openapi.json). Request schemas are the
// TypeBox models the routes validate with; response schemas are written here once.
import { type TSchema, Type } from '@sinclair/typebox'
import { API_VERSIONS, LATEST_API_VERSION } from '../../shared/patients/versions'
import { FlowBody, PatientBody } from './models'

const N = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()])
const Ts = Type.String({ format: 'date-time', description: 'ISO 8601 UTC with milliseconds' })
const Status = Type.Union([Type.Literal('open'), Type.Literal('complete'), Type.Literal('expired')])

const schemas = {
  PatientCreate: PatientBody,
  PatientFlowCreate: FlowBody,
  Patient: Type.Object({
    id: Type.String(),
    resource_type: Type.Literal('patient'),
    email: N(Type.String()),
    name: N(Type.String()),
    metadata: Type.Record(Type.String(), Type.Unknown()),
    created_at: Ts,
  }),
  Connection: Type.Object({
    id: Type.String({ description: 'conn_ id' }),
    resource_type: Type.Literal('connection'),
    session_id: N(Type.String()),
    connection_id: Type.String({ description: 'the FHIR source (fhirsrc_) id' }),
    status: Type.Union(['active', 'failed', 'expired', 'refresh_failed', 'disconnected'].map((s) => Type.Literal(s))),
    scopes: Type.Array(Type.String()),
    failure_code: N(Type.String()),
    failure_at: N(Ts),
    created_at: Ts,
    updated_at: Ts,
  }),
  PatientFlow: Type.Object({
    id: Type.String({ description: 'pf_ (patient_flow) or sess_ (session) id' }),
    resource_type: Type.Union([Type.Literal('patient_flow'), Type.Literal('session')]),
    status: Status,
    url: Type.String({ format: 'uri', description: 'the hosted page the patient opens' }),
    patient_id: Type.String(),
    connection_id: N(Type.String()),
    recommended_connection_ids: N(Type.Array(Type.String())),
    return_url: Type.String({ format: 'uri' }),
    return_button_label: N(Type.String()),
    connections: Type.Array(
      Type.Object({
        id: N(Type.String()),
        connection_id: Type.String(),
        status: Type.String(),
        failure_code: N(Type.String()),
        failure_at: N(Ts),
        created_at: Ts,
      }),
    ),
    expires_at: Ts,
    metadata: Type.Record(Type.String(), Type.Unknown()),
    created_at: Ts,
  }),
  FhirSource: Type.Object({
    id: Type.String({ description: 'fhirsrc_ id' }),
    resource_type: Type.Literal('fhir_source'),
    name: Type.String(),
    type: N(Type.String()),
    fhir_base_url: Type.String({ format: 'uri' }),
    logo_url: N(Type.String({ format: 'uri' })),
    portal_url: N(Type.String({ format: 'uri' })),
  }),
  List: Type.Object({ resource_type: Type.Literal('list'), data: Type.Array(Type.Unknown()), has_more: Type.Boolean(), next_cursor: N(Type.String()) }),
  Error: Type.Object({
    error: Type.Object({
      type: Type.String(),
      code: Type.String(),
      message: Type.String(),
      param: N(Type.String()),
      doc_url: Type.String(),
      request_id: Type.String(),
    }),
  }),
}

const ref = (name: keyof typeof schemas) => ({ $ref: `#/components/schemas/${name}` })
const json = (schema: unknown) => ({ content: { 'application/json': { schema } } })
const listOf = (name: keyof typeof schemas) => ({ allOf: [ref('List'), { type: 'object', properties: { data: { type: 'array', items: ref(name) } } }] })
const errors = Object.fromEntries(
  [
    ['400', 'Validation error, malformed request or unsupported API version'],
    ['401', 'Missing or invalid API key'],
    ['404', 'Not found in your organization'],
    ['409', 'Conflict (duplicate patient_id, Idempotency-Key reuse)'],
    ['413', 'Payload too large'],
    ['429', 'Rate limited (Retry-After)'],
    ['500', 'Server error'],
  ].map(([s, d]) => [s, { description: d, ...json(ref('Error')) }]),
)
const p = (name: string, where: 'path' | 'query' | 'header', schema: unknown, description?: string, required = where === 'path') => ({
  name,
  in: where,
  required,
  schema,
  description,
})
const listParams = [
  p('limit', 'query', { type: 'integer', minimum: 1, maximum: 100, default: 10 }),
  p('starting_after', 'query', { type: 'string' }, 'next_cursor of the previous page'),
]
const id = p('id', 'path', { type: 'string' })
const op = (summary: string, ok: unknown, extra: Record<string, unknown> = {}) => ({
  summary,
  parameters: [p('Version', 'header', { type: 'string', enum: API_VERSIONS }), ...((extra.parameters as unknown[]) ?? [])],
  ...(extra.body ? { requestBody: { required: true, ...json(extra.body) } } : {}),
  responses: { '200': { description: 'OK', ...json(ok) }, ...errors },
})
const idem = p('Idempotency-Key', 'header', { type: 'string', maxLength: 255 }, 'Replays the saved response of the same request for 24 h')
const status = p('status', 'query', { type: 'string', enum: ['open', 'complete', 'expired'] })
const conn = p('connection_id', 'path', { type: 'string' })
const anyObject = { type: 'object' }

export function openApiDocument() {
  return {
    openapi: '3.1.0',
    info: { title: 'Patient Connection API', version: LATEST_API_VERSION },
    security: [{ bearer: [] }],
    paths: {
      '/patients': {
        post: op('Create a patient', ref('Patient'), { body: ref('PatientCreate'), parameters: [idem] }),
        get: op('List patients', listOf('Patient'), {
          parameters: [...listParams, p('patient_id', 'query', { type: 'string' }), p('email', 'query', { type: 'string' })],
        }),
      },
      '/patients/{id}': {
        get: op(
          'Retrieve a patient with its connections (newest first)',
          { allOf: [ref('Patient'), { type: 'object', properties: { connections: { type: 'array', items: ref('Connection') } } }] },
          { parameters: [id] },
        ),
        put: op('Replace a patient (omitted fields are cleared)', ref('Patient'), { body: ref('PatientCreate'), parameters: [id] }),
        delete: op(
          'Delete a patient with its flows, sessions, connections and records',
          { type: 'object', properties: { id: { type: 'string' }, resource_type: { const: 'patient' }, deleted: { const: true } } },
          { parameters: [id] },
        ),
      },
      '/patient-flows': {
        post: op('Initialize a patient flow (upserts the patient)', ref('PatientFlow'), { body: ref('PatientFlowCreate'), parameters: [idem] }),
      },
      '/patient-flows/{id}': { get: op('Retrieve a patient flow (a pf_ or sess_ id)', ref('PatientFlow'), { parameters: [id] }) },
      '/patients/{id}/patient-flows': { get: op('List patient flows of a patient', listOf('PatientFlow'), { parameters: [id, ...listParams, status] }) },
      '/sessions': {
        post: op('Create a session (alias of POST /patient-flows; upserts the patient)', ref('PatientFlow'), {
          body: ref('PatientFlowCreate'),
          parameters: [idem],
        }),
      },
      '/sessions/{id}': { get: op('Retrieve a session (a sess_ or pf_ id)', ref('PatientFlow'), { parameters: [id] }) },
      '/patients/{id}/sessions': { get: op('List sessions of a patient', listOf('PatientFlow'), { parameters: [id, ...listParams, status] }) },
      '/patients/{id}/$everything': {
        get: op(
          'Export patient FHIR resources (searchset Bundle)',
          { type: 'object', properties: { resourceType: { const: 'Bundle' } } },
          {
            parameters: [
              id,
              p('_type', 'query', { type: 'string' }),
              p('_since', 'query', { type: 'string' }),
              p('_count', 'query', { type: 'integer', minimum: 1, maximum: 100, default: 100 }),
              p('starting_after', 'query', { type: 'string', minLength: 12, maxLength: 12 }),
              p('ending_before', 'query', { type: 'string', minLength: 12, maxLength: 12 }),
            ],
          },
        ),
      },
      '/patients/{id}/fhir/{type}/{resource_id}': {
        get: op(
          'Read one resource of the patient export (what each entry fullUrl points at)',
          { type: 'object', properties: { resourceType: { type: 'string' }, id: { type: 'string' } } },
          { parameters: [id, p('type', 'path', { type: 'string' }), p('resource_id', 'path', { type: 'string' })] },
        ),
      },
      '/connections': {
        get: op('List FHIR sources', listOf('FhirSource'), {
          parameters: [...listParams, p('q', 'query', { type: 'string' }), p('type', 'query', { type: 'string' })],
        }),
      },
      '/connections/{id}': { get: op('Retrieve a FHIR source by fhirsrc_ id or raw FHIR base URL', ref('FhirSource'), { parameters: [id] }) },
      // The connect flow (api/connect): a patient's connections and the organization's webhooks.
      '/patients/{id}/connections/{connection_id}': {
        get: op('Retrieve a connection with the state of its record pull', ref('Connection'), { parameters: [id, conn] }),
        delete: op('Disconnect (delete_records=true also removes the records pulled from that source)', ref('Connection'), {
          parameters: [id, conn, p('delete_records', 'query', { type: 'boolean' })],
        }),
      },
      '/patients/{id}/connections/{connection_id}/sync': { post: op('Pull the records again now (202)', ref('Connection'), { parameters: [id, conn] }) },
      '/webhooks': {
        post: op('Register a webhook endpoint (its signing secret is shown once)', anyObject, { body: anyObject, parameters: [idem] }),
        get: op('List webhook endpoints', { type: 'object' }, { parameters: listParams }),
      },
      '/webhooks/{id}': {
        get: op('Retrieve a webhook endpoint', anyObject, { parameters: [id] }),
        patch: op('Update a webhook endpoint (url, events, status)', anyObject, { body: anyObject, parameters: [id] }),
        delete: op('Delete a webhook endpoint', anyObject, { parameters: [id] }),
      },
      '/webhooks/{id}/rotate-secret': { post: op('Rotate the signing secret', anyObject, { parameters: [id] }) },
      '/webhooks/{id}/events': {
        get: op('List the events sent to an endpoint, with their delivery attempts', { type: 'object' }, { parameters: [id, ...listParams] }),
      },
      '/events/{id}/redeliver': { post: op('Deliver an event again (once a minute)', anyObject, { parameters: [id] }) },
    },
    components: { schemas, securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
  }
}
