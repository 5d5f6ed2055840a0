// The dependency rule of the codebase (shared/STYLE.md rule 1 and ARCHITECTURE): shared/ is
// framework-free and imports neither api/ nor workers/; workers/ does not import api/; only api/
// imports Elysia; BullMQ Workers are created only in workers/. Inside shared/fhir, the layers: the
// router and Bundles above interactions and operations, those above storage and queries (the
// repository is handed its collaborators, never imports them), those above the definitions. Inside
// search/, the index side and the query side stand on the self-registering parameter types, apart. No
// import cycles anywhere.
import { describe, expect, test } from 'bun:test'
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'

const ROOT = join(import.meta.dir, '..')
const LAYERS = ['api', 'workers', 'shared'] as const
type Layer = (typeof LAYERS)[number]

interface SourceFile {
  path: string // relative to ROOT
  layer: Layer
  text: string
  imports: string[]
}

function listTs(dir: string): string[] {
  const out: string[] = []
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === 'node_modules') continue
    const full = join(dir, entry.name)
    if (entry.isDirectory()) out.push(...listTs(full))
    else if (entry.name.endsWith('.ts')) out.push(full)
  }
  return out
}

// Static imports, re-exports, `import type`, side-effect imports, dynamic import() and require().
const IMPORT =
  /(?:^|[\s;])(?:import|export)\s[^'"]*?\sfrom\s*['"]([^'"]+)['"]|(?:^|[\s;])import\s*['"]([^'"]+)['"]|\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)|\brequire\s*\(\s*['"]([^'"]+)['"]\s*\)/gm

function importsOf(text: string): string[] {
  const out: string[] = []
  for (const m of text.matchAll(IMPORT)) out.push((m[1] ?? m[2] ?? m[3] ?? m[4]) as string)
  return out
}

const files: SourceFile[] = LAYERS.flatMap((layer) =>
  listTs(join(ROOT, layer)).map((full) => {
    const text = readFileSync(full, 'utf8')
    return { path: relative(ROOT, full), layer, text, imports: importsOf(text) }
  }),
)

/** The top-level folder an import points into, or the package name for a bare specifier. */
function target(file: SourceFile, spec: string): { layer?: string; pkg?: string } {
  if (spec.startsWith('.') || spec.startsWith('/')) {
    const abs = resolve(ROOT, dirname(file.path), spec)
    return { layer: relative(ROOT, abs).split(/[\\/]/)[0] }
  }
  const parts = spec.split('/')
  return { pkg: spec.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0] }
}

function violations(pred: (f: SourceFile, t: { layer?: string; pkg?: string }, spec: string) => boolean): string[] {
  const out: string[] = []
  for (const f of files) for (const spec of f.imports) if (pred(f, target(f, spec), spec)) out.push(`${f.path} imports ${spec}`)
  return out
}

describe('dependency rule', () => {
  test('the scan sees the code', () => {
    expect(files.filter((f) => f.layer === 'api').length).toBeGreaterThan(0)
    expect(files.filter((f) => f.layer === 'shared').length).toBeGreaterThan(10)
    expect(files.filter((f) => f.layer === 'workers').length).toBeGreaterThan(0)
    // The parser finds the imports it must judge.
    expect(files.find((f) => f.path === join('api', 'app.ts'))?.imports).toContain('elysia')
  })

  test('shared/ imports neither api/ nor workers/ nor elysia', () => {
    expect(violations((f, t) => f.layer === 'shared' && (t.layer === 'api' || t.layer === 'workers' || t.pkg === 'elysia'))).toEqual([])
  })

  test('workers/ imports neither api/ nor elysia', () => {
    expect(violations((f, t) => f.layer === 'workers' && (t.layer === 'api' || t.pkg === 'elysia'))).toEqual([])
  })

  test('only api/ imports elysia', () => {
    expect(violations((f, t) => f.layer !== 'api' && (t.pkg === 'elysia' || (t.pkg ?? '').startsWith('@elysiajs')))).toEqual([])
  })

  test('BullMQ Workers are created only in workers/', () => {
    const offenders = files
      .filter((f) => f.layer !== 'workers' && /\bnew\s+Worker\s*\(/.test(f.text) && f.imports.some((i) => i === 'bullmq'))
      .map((f) => f.path)
    expect(offenders).toEqual([])
    const importsWorker = files
      .filter((f) => f.layer !== 'workers' && /import\s*\{[^}]*\bWorker\b[^}]*\}\s*from\s*['"]bullmq['"]/.test(f.text))
      .map((f) => f.path)
    expect(importsWorker).toEqual([])
  })
})

/** The file an import names, relative to ROOT (with its .ts or /index.ts); undefined for packages. */
function resolveImport(file: SourceFile, spec: string): string | undefined {
  if (!spec.startsWith('.')) return undefined
  const abs = relative(ROOT, resolve(ROOT, dirname(file.path), spec))
  return paths.has(`${abs}.ts`) ? `${abs}.ts` : paths.has(join(abs, 'index.ts')) ? join(abs, 'index.ts') : paths.has(abs) ? abs : undefined
}

const paths = new Set(files.map((f) => f.path))
const sources = files.filter((f) => !f.path.endsWith('.test.ts'))
const edges = new Map(sources.map((f) => [f.path, f.imports.map((i) => resolveImport(f, i)).filter((t): t is string => t !== undefined)]))

/** Every import cycle, as the files of each strongly connected component (Tarjan's algorithm). */
function importCycles(): string[][] {
  let next = 0
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const cycles: string[][] = []
  const visit = (v: string) => {
    index.set(v, next)
    low.set(v, next++)
    stack.push(v)
    onStack.add(v)
    for (const w of edges.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w)
        low.set(v, Math.min(low.get(v) as number, low.get(w) as number))
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v) as number, index.get(w) as number))
    }
    if (low.get(v) !== index.get(v)) return
    const component: string[] = []
    let w: string
    do {
      w = stack.pop() as string
      onStack.delete(w)
      component.push(w)
    } while (w !== v)
    if (component.length > 1 || (edges.get(v) ?? []).includes(v)) cycles.push(component.sort())
  }
  for (const v of edges.keys()) if (!index.has(v)) visit(v)
  return cycles
}

// The layers of the FHIR core, highest first. A file imports only from its own layer or lower ones, so
// that interactions sit above the storage and the queries they use, and those above the definitions.
// Every file of shared/fhir has a layer: a new folder must say where it stands.
const FHIR = join('shared', 'fhir')
const FHIR_LAYERS: [number, string, string[]][] = [
  [4, 'the edges: the router, Bundles, the composition of the store', ['router.ts', 'bundle/', 'store.ts', 'prepare.ts']],
  [3, 'interactions and operations', ['interactions/', 'operations/', 'request.ts', 'meta-change.ts']],
  [2, 'storage and queries', ['repo/', 'search/', 'terminology/', 'reindex/']],
  [
    1,
    'definitions and what is computed from a resource alone',
    [
      'definitions/',
      'format/',
      'validate/',
      'patch/',
      'ids.ts',
      'outcome.ts',
      'paging.ts',
      'references.ts',
      'resource-errors.ts',
      'resource-meta.ts',
      'subset.ts',
    ],
  ],
]

function layerOf(path: string): number | undefined {
  const inner = relative(FHIR, path).split(/[\\/]/).join('/')
  for (const [level, , prefixes] of FHIR_LAYERS) if (prefixes.some((p) => (p.endsWith('/') ? inner.startsWith(p) : inner === p))) return level
  return undefined
}

describe('the shape of the FHIR core', () => {
  const fhirSources = sources.filter((f) => f.path.startsWith(`${FHIR}/`))

  test('the scan sees its imports', () => {
    expect(fhirSources.length).toBeGreaterThan(100)
    expect(edges.get(join(FHIR, 'router.ts'))).toContain(join(FHIR, 'interactions', 'read.ts'))
  })

  test('every file of shared/fhir has a layer', () => {
    expect(fhirSources.filter((f) => layerOf(f.path) === undefined).map((f) => f.path)).toEqual([])
  })

  test('no file imports from a layer above its own (interactions above the repository and search)', () => {
    const upward: string[] = []
    for (const f of fhirSources) {
      const own = layerOf(f.path) as number
      for (const t of edges.get(f.path) ?? []) {
        const theirs = t.startsWith(`${FHIR}/`) ? layerOf(t) : undefined
        if (theirs !== undefined && theirs > own) upward.push(`${f.path} (layer ${own}) imports ${t} (layer ${theirs})`)
      }
    }
    expect(upward).toEqual([])
  })

  test('the repository is given its collaborators: repo/ imports neither search/ nor terminology/', () => {
    const reaching = fhirSources
      .filter((f) => f.path.startsWith(join(FHIR, 'repo') + '/'))
      .flatMap((f) => (edges.get(f.path) ?? []).filter((t) => /^shared\/fhir\/(search|terminology)\//.test(t)).map((t) => `${f.path} imports ${t}`))
    expect(reaching).toEqual([])
  })
})

// Inside search/: the index side (what a write stores) and the query side (what a search reads) each
// build on the search-parameter types and the shared definitions, never on each other; a type is one
// unit (types/<type>.ts) that registers itself, and both sides reach the units through types/index.ts.
const SEARCH = join(FHIR, 'search')
const searchSide = (path: string): string | undefined => {
  if (!path.startsWith(`${SEARCH}/`)) return undefined
  const parts = relative(SEARCH, path).split(/[\\/]/)
  return parts.length === 1 ? 'shared' : parts[0]
}
// What each part of search/ may import from search/ (itself always).
const SEARCH_DEPENDS: Record<string, string[]> = {
  index: ['types', 'shared'],
  query: ['types', 'shared'],
  types: ['shared'],
  shared: [],
}

describe('the shape of search/', () => {
  const searchSources = sources.filter((f) => f.path.startsWith(`${SEARCH}/`))
  const units = searchSources.filter((f) => /=\s*registerParamType</.test(f.text))

  test('every file of search/ is in a known part', () => {
    expect(searchSources.length).toBeGreaterThan(30)
    expect(searchSources.filter((f) => !((searchSide(f.path) as string) in SEARCH_DEPENDS)).map((f) => f.path)).toEqual([])
  })

  test('the index side does not import the query side, nor the query side the index side; the types import neither', () => {
    const crossing: string[] = []
    for (const f of searchSources) {
      const own = searchSide(f.path) as string
      for (const t of edges.get(f.path) ?? []) {
        const theirs = searchSide(t)
        if (theirs !== undefined && theirs !== own && !SEARCH_DEPENDS[own]?.includes(theirs)) crossing.push(`${f.path} (${own}) imports ${t} (${theirs})`)
      }
    }
    expect(crossing).toEqual([])
  })

  test('each type unit registers itself once and types/index.ts imports every unit', () => {
    const index = join(SEARCH, 'types', 'index.ts')
    expect(units.length).toBeGreaterThanOrEqual(8)
    for (const u of units) {
      expect(dirname(u.path)).toBe(join(SEARCH, 'types'))
      expect(u.text.match(/=\s*registerParamType</g)?.length).toBe(1)
    }
    const imported = new Set(edges.get(index))
    expect(units.map((u) => u.path).filter((p) => !imported.has(p))).toEqual([])
  })

  test('outside types/, the registry is read through types/index.ts only', () => {
    const registry = join(SEARCH, 'types', 'param-type.ts')
    const reaching = sources.filter((f) => !f.path.startsWith(join(SEARCH, 'types') + '/') && (edges.get(f.path) ?? []).includes(registry)).map((f) => f.path)
    expect(reaching).toEqual([])
  })

  test('every searchable type of parameter has its unit, with its own index table', async () => {
    const { paramType, paramTypes } = await import('../shared/fhir/search/types')
    const kinds = ['string', 'token', 'reference', 'date', 'number', 'quantity', 'uri', 'composite'] as const
    for (const k of kinds) expect(paramType(k)?.type).toBe(k)
    expect(paramType('special')).toBeUndefined()
    const tables = [...paramTypes()].map((t) => t.table)
    expect(new Set(tables).size).toBe(tables.length)
    expect(tables.length).toBe(units.length)
  })
})

describe('imports', () => {
  test('no import cycles, type-only imports included', () => {
    expect(importCycles()).toEqual([])
  })
})
