// Every FHIR operation the server knows, by name. The router dispatches here; the
// CapabilityStatement lists them.
import { operations as everything } from './everything'
import { operations as expunge } from './expunge'
import { operations as meta } from './meta'
import { operations as reindex } from './reindex'
import { operations as resourceCounts } from './resource-counts'
import { operations as terminology } from './terminology'
import type { OperationDef } from './types'
import { operations as validate } from './validate'

const all: OperationDef[] = [...validate, ...expunge, ...meta, ...resourceCounts, ...reindex, ...terminology, ...everything]

const byName = new Map<string, OperationDef[]>()
for (const op of all) byName.set(op.name, [...(byName.get(op.name) ?? []), op])

/** The definitions registered under a name (several when they differ by level or type). */
export function operationsNamed(name: string): OperationDef[] {
  return byName.get(name) ?? []
}

export function allOperations(): readonly OperationDef[] {
  return all
}
