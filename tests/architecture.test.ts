// The dependency rule of the codebase (shared/STYLE.md rule 1 and ARCHITECTURE): shared/ is
// framework-free and imports neither api/ nor workers/; workers/ does not import api/; only api/
// imports Elysia; BullMQ Workers are created only in workers/.
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
