// The transaction-bundle job: a transaction or batch Bundle (as JSON) to process on a worker.
import { Type } from '@sinclair/typebox'
import { defineJob } from './definition'

export const TransactionBundleJob = defineJob(
  'transaction-bundle',
  Type.Object({
    /** The Bundle as JSON: text, or the UTF-8 bytes the API node received (read back from Redis as text). */
    body: Type.Union([Type.String(), Type.Uint8Array()]),
    prefer: Type.Optional(Type.String()),
    /** The FHIR base URL the request came to (for links and local references). */
    baseUrl: Type.String(),
    /** The submitter's API-key scopes: each entry is authorised as the same request made alone.
     *  Absent: no key was asked for (authentication disabled). */
    scopes: Type.Optional(Type.Array(Type.Union([Type.Literal('read'), Type.Literal('write'), Type.Literal('admin'), Type.Literal('export')]))),
  }),
  // A worker that dies mid-bundle leaves nothing written (one database transaction); an error other than
  // the input's (4xx, never retried) is retried.
  { attempts: 3, backoff: { type: 'exponential', delay: 1000 }, removeOnComplete: { age: 3600 }, removeOnFail: { age: 24 * 3600 } },
  ['body'],
  true, // the response Bundle, as JSON text
)
