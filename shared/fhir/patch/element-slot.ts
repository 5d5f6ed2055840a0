// Reading and writing one FHIR JSON property as a list of (value, `_` companion) pairs, so a primitive's
// id/extensions stay aligned with its value when patched, and pruning what a patch leaves empty.
// https://hl7.org/fhir/R4/json.html#primitive

/** One element as FHIR JSON holds it: the value under `name`, the primitive's id/extension under `_name`. */
export interface ElementEntry {
  value?: unknown
  companion?: Record<string, unknown> | null
}

/** Where an element lives: `container[key]`, or `container[key][index]` for a repeating element. */
export interface Slot {
  container: Record<string, any>
  key: string
  index?: number
}

function present(v: unknown): boolean {
  return v !== undefined && v !== null
}

/** All entries of a repeating property; `[]` when absent. The longer of `key`/`_key` sets the length. */
export function readList(container: Record<string, any>, key: string): ElementEntry[] {
  const values: unknown[] = asArray(container[key])
  const companions: any[] = asArray(container[`_${key}`])
  const length = Math.max(values.length, companions.length)
  return Array.from({ length }, (_, i) => ({ value: values[i] ?? undefined, companion: companions[i] ?? null }))
}

/** Writes a repeating property back, padding with `null` where only one side exists; removes empty arrays. */
export function writeList(container: Record<string, any>, key: string, entries: ElementEntry[]): void {
  const values = entries.map((e) => (present(e.value) ? e.value : null))
  const companions = entries.map((e) => (present(e.companion) ? e.companion : null))
  setOrDelete(container, key, values.some(present) ? values : undefined)
  setOrDelete(container, `_${key}`, companions.some(present) ? companions : undefined)
}

export function readSingle(container: Record<string, any>, key: string): ElementEntry {
  return { value: container[key] ?? undefined, companion: container[`_${key}`] ?? null }
}

export function writeSingle(container: Record<string, any>, key: string, entry: ElementEntry | undefined): void {
  setOrDelete(container, key, present(entry?.value) ? entry!.value : undefined)
  setOrDelete(container, `_${key}`, present(entry?.companion) ? entry!.companion : undefined)
}

export function hasProperty(container: Record<string, any>, key: string): boolean {
  return present(container[key]) || present(container[`_${key}`])
}

/**
 * The object holding the id/extension of the primitive at `slot`, created on demand so that an
 * extension can be added to a primitive that has none yet.
 */
export function companionOf(slot: Slot, create: boolean): Record<string, any> | undefined {
  if (slot.index === undefined) {
    const entry = readSingle(slot.container, slot.key)
    if (!entry.companion && create) writeSingle(slot.container, slot.key, { ...entry, companion: {} })
    return slot.container[`_${slot.key}`] ?? undefined
  }
  const list = readList(slot.container, slot.key)
  const entry = list[slot.index]
  if (!entry) return undefined
  if (!entry.companion && create) {
    entry.companion = {}
    writeList(slot.container, slot.key, list)
  }
  return slot.container[`_${slot.key}`]?.[slot.index] ?? undefined
}

/**
 * Removes empty objects and arrays left behind by deletes, and `null` padding that no longer pairs
 * with anything: JSON "must not" carry empty objects, arrays or properties. https://hl7.org/fhir/R4/json.html
 */
export function pruneEmpty(node: unknown): unknown {
  if (Array.isArray(node)) {
    const items = node.map(pruneEmpty)
    return items.some(present) ? items : undefined
  }
  if (!node || typeof node !== 'object') return node
  const obj = node as Record<string, any>
  const names = new Set(Object.keys(obj).map((k) => (k.startsWith('_') ? k.slice(1) : k)))
  for (const name of names) {
    if (Array.isArray(obj[name]) || Array.isArray(obj[`_${name}`])) {
      const list = readList(obj, name)
        .map((e) => ({ value: pruneEmpty(e.value), companion: pruneEmpty(e.companion) as ElementEntry['companion'] }))
        .filter((e) => present(e.value) || present(e.companion))
      writeList(obj, name, list)
    } else {
      const { value, companion } = readSingle(obj, name)
      writeSingle(obj, name, { value: pruneEmpty(value), companion: pruneEmpty(companion) as ElementEntry['companion'] })
    }
  }
  return Object.keys(obj).length ? obj : undefined
}

function asArray(v: unknown): unknown[] {
  return Array.isArray(v) ? v : present(v) ? [v] : []
}

function setOrDelete(container: Record<string, any>, key: string, value: unknown): void {
  if (value === undefined) delete container[key]
  else container[key] = value
}
