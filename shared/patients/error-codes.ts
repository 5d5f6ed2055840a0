// Every error code the patient API can answer, in one place: its envelope `type`, its usual HTTP
// status, when it happens and what to do. The envelope (api/patients/envelope.ts) renders only these
// codes, `apiError()` accepts only these, and the error documentation page every `doc_url` points at
// (api/patients/error-docs.ts) is generated from this table. Types and statuses follow
// ../shared/notes/patient-api.md §2; the failure codes a direct-mode return_url carries follow §6.1.

export interface ErrorCodeDoc {
  type: string
  status: number
  /** When the server answers it. */
  when: string
  /** What the client (or the patient) should do. */
  action: string
}

export const ERROR_CODES = {
  missing_api_key: {
    type: 'authentication_error',
    status: 401,
    when: 'The request has no `Authorization: Bearer <API key>` header.',
    action: 'Send your organization API key as a bearer token on every request.',
  },
  invalid_api_key: {
    type: 'authentication_error',
    status: 401,
    when: 'The bearer key is unknown, revoked, or not an organization key.',
    action: 'Check the key (copy errors, a revoked key, a key of another environment); create a new key if needed.',
  },
  forbidden: {
    type: 'permission_error',
    status: 403,
    when: 'The key is valid but may not perform this operation.',
    action: 'Use a key of the organization that owns the resource, or ask an operator for access.',
  },
  bad_request: {
    type: 'invalid_request_error',
    status: 400,
    when: 'The request is malformed: a body that is not JSON, a missing required field, an unknown field, mutually exclusive fields together, or (405) a method the path does not allow.',
    action: 'Read `message` and `param`, fix the request and send it again; do not retry it unchanged.',
  },
  invalid_data: {
    type: 'invalid_request_error',
    status: 400,
    when: 'A field or query parameter has a value that failed validation (wrong type, format or range, an unknown id, an expired cursor, a NUL byte).',
    action: '`param` names the field and `message` says what was expected; correct the value.',
  },
  unsupported_api_version: {
    type: 'invalid_request_error',
    status: 400,
    when: 'The `Version` header names an API version this server does not support.',
    action: 'Send `Version: 2026-04-25`, or omit the header to use the version pinned on your key.',
  },
  payload_too_large: {
    type: 'invalid_request_error',
    status: 413,
    when: 'The request body exceeds the size limit (1 MiB for JSON bodies).',
    action: 'Send a smaller body; split large metadata.',
  },
  headers_too_large: {
    type: 'invalid_request_error',
    status: 431,
    when: 'The request headers together exceed the limit (8 KiB).',
    action: 'Drop unneeded headers or cookies; the API needs only Authorization, Version, Content-Type and Idempotency-Key.',
  },
  oauth_state_expired: {
    type: 'invalid_request_error',
    status: 400,
    when: 'The patient came back from the source after the sign-in attempt expired (30 minutes) or from another browser.',
    action: 'The patient starts again from the connection link (or a new one).',
  },
  outbound_refused: {
    type: 'invalid_request_error',
    status: 400,
    when: 'A URL the server would call (a webhook endpoint, a source) resolves to an address it refuses (loopback, private, link-local, metadata).',
    action: 'Use a public HTTPS address.',
  },
  resource_not_found: {
    type: 'not_found_error',
    status: 404,
    when: 'The resource does not exist in your organization (or the path names no endpoint).',
    action: 'Check the id and the key’s organization; ids are case-sensitive.',
  },
  resource_conflict: {
    type: 'conflict_error',
    status: 409,
    when: 'The request conflicts with the current state, e.g. completing a flow that is already complete or expired.',
    action: 'Read the resource again and act on its current state.',
  },
  external_id_already_exists: {
    type: 'conflict_error',
    status: 409,
    when: 'A patient with this `patient_id` already exists in your organization.',
    action: 'Use PUT /patients/{id} to change it, or create a flow, which upserts the patient.',
  },
  idempotency_key_reused: {
    type: 'idempotency_error',
    status: 409,
    when: 'An `Idempotency-Key` was sent again with a different request body or path.',
    action: 'Use a new key for a new request; reuse a key only to retry the very same request.',
  },
  idempotency_key_in_use: {
    type: 'idempotency_error',
    status: 409,
    when: 'A request with the same `Idempotency-Key` is still running.',
    action: 'Wait and retry with the same key: the saved answer is replayed once the first request ends.',
  },
  throttled: {
    type: 'rate_limit_error',
    status: 429,
    when: 'The API key sent more requests than its rate limit allows in the window.',
    action: 'Wait the seconds of the `Retry-After` header, then retry; spread requests over time.',
  },
  fhir_error: {
    type: 'ehr_error',
    status: 502,
    when: 'The source EHR’s FHIR server failed or answered an error.',
    action: 'Retry later with backoff; if it persists the source may be down.',
  },
  oauth_error: {
    type: 'ehr_error',
    status: 502,
    when: 'The source’s SMART configuration or sign-in endpoints could not be reached or are invalid.',
    action: 'Retry later, or connect through another source.',
  },
  token_exchange_failed: {
    type: 'ehr_error',
    status: 502,
    when: 'The source refused to exchange the authorization code for tokens.',
    action: 'The patient connects again; if it keeps failing the source’s client registration needs checking.',
  },
  outbound_failed: {
    type: 'ehr_error',
    status: 502,
    when: 'A call to another server (a source, a webhook endpoint) failed on the network.',
    action: 'Retry later with backoff.',
  },
  internal_error: {
    type: 'api_error',
    status: 500,
    when: 'An unexpected server error.',
    action: 'Retry with backoff; report `request_id` if it persists.',
  },
  config_missing: {
    type: 'api_error',
    status: 500,
    when: 'The server or a source lacks configuration it needs (e.g. a source with no SMART client registered).',
    action: 'Report it to the operator with `request_id`; connect through another source meanwhile.',
  },
  secret_unreadable: {
    type: 'api_error',
    status: 500,
    when: 'A stored secret (a token, a signing secret) cannot be opened with the server’s keys.',
    action: 'Report it to the operator with `request_id`.',
  },
} as const satisfies Record<string, ErrorCodeDoc>

export type ErrorCode = keyof typeof ERROR_CODES

export const isErrorCode = (v: unknown): v is ErrorCode => typeof v === 'string' && Object.hasOwn(ERROR_CODES, v)

/**
 * The `error` a direct-mode flow's return_url carries with `success=false` (and the failure_code of a
 * failed connection): ../shared/notes/patient-api.md §6.1.
 */
export const RETURN_ERROR_CODES = {
  user_denied: {
    when: 'The patient declined to share their records at the source.',
    action: 'Offer the patient to try again, or another source.',
  },
  oauth_callback_failed: {
    when: 'The source’s sign-in ended with an error, or the code could not be exchanged for tokens.',
    action: 'Offer the patient to try again later; check the connection’s failure in GET /patients/{id}.',
  },
  token_exchange_failed: {
    when: 'The patient signed in at the source, but the source refused to exchange the authorization code for tokens.',
    action: 'Offer the patient to try again; if it keeps failing the source’s client registration needs checking.',
  },
  source_unavailable: {
    when: 'The source could not be reached before sign-in (its SMART configuration did not answer, or it is not set up for connections).',
    action: 'Try again later or offer another source; the flow is complete, so create a new one to retry.',
  },
} as const satisfies Record<string, Omit<ErrorCodeDoc, 'type' | 'status'>>

export type ReturnErrorCode = keyof typeof RETURN_ERROR_CODES
