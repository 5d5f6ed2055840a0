// $get-resource-counts: one part per resource type with rows, name = type and valueInteger = count,
// sorted by type; logically deleted resources still count until expunged (HAPI 7.0). Unlike HAPI's
// cache the counts are exact (the repository's, shared/fhir/repo/resource-counts.ts). An admin operation.
import { parameters } from './params'
import type { OperationDef } from './types'

export const operations: OperationDef[] = [
  {
    name: '$get-resource-counts',
    levels: ['system'],
    methods: ['GET', 'POST'],
    scope: 'admin',
    handler: async (_req, ctx) => {
      const counts = await ctx.repo.resourceCounts()
      // No types: a Parameters without parameter (FHIR JSON has no empty arrays).
      if (counts.length === 0) return { status: 200, resource: { resourceType: 'Parameters' } }
      return { status: 200, resource: parameters(...counts.map((c) => ({ name: c.type, valueInteger: c.count }))) }
    },
  },
]
