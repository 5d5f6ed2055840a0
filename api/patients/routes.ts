// The Patient Connection API (issue 7): patients, patient flows, sessions, FHIR sources, export.
import { Elysia } from 'elysia'
import type { AppDeps } from '../app'

export function patientApiRoutes(_deps: AppDeps) {
  return new Elysia({ name: 'patient-api' })
}
