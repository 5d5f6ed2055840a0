// Organizations: the tenants of the patient API. Every patient, flow, session and connection belongs
// to one, and another organization's objects are invisible.
import type { Sql } from '../db/client'
import { badRequest, notFound } from './api-error'
import { newId } from './ids'

export interface Organization {
  id: string
  resource_type: 'organization'
  name: string
  created_at: string
}

interface OrganizationRow {
  id: string
  name: string
  created_at: Date
}

const view = (r: OrganizationRow): Organization => ({ id: r.id, resource_type: 'organization', name: r.name, created_at: r.created_at.toISOString() })

export async function createOrganization(sql: Sql, name: string): Promise<Organization> {
  if (!name.trim() || name.length > 200) throw badRequest('name must be 1-200 characters', 'name')
  const [row] = await sql<OrganizationRow[]>`insert into organization (id, name) values (${newId('org')}, ${name}) returning id, name, created_at`
  return view(row)
}

export async function listOrganizations(sql: Sql): Promise<Organization[]> {
  const rows = await sql<OrganizationRow[]>`select id, name, created_at from organization order by created_at desc, id desc`
  return rows.map(view)
}

/** The organization, or 404 resource_not_found. */
export async function getOrganization(sql: Sql, id: string): Promise<Organization> {
  const [row] = await sql<OrganizationRow[]>`select id, name, created_at from organization where id = ${id}`
  if (!row) throw notFound('organization', id)
  return view(row)
}
