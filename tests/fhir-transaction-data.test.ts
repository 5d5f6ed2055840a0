// Real data through transaction and batch Bundles: the synthea-conditional set loaded twice (batch bundles
// first), counts per type as in the files, no duplicates, conditional references at the right targets.
import { describe, expect, test } from 'bun:test'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { dataPath } from './data'
import { readJson, useTestServer } from './harness'

describe('synthea-conditional loaded twice', () => {
  const s = useTestServer()
  const CONDITIONAL = new Set(['Organization', 'Practitioner', 'Location'])

  test('every bundle 200, counts per type match the files, no duplicates the second time, conditional references resolved', async () => {
    const dir = dataPath('synthea-conditional')
    const files = readdirSync(dir)
      .filter((f) => f.endsWith('.json'))
      .map((f) => join(dir, f))
    const bundles = files.map((f) => ({ file: f, body: JSON.parse(readFileSync(f, 'utf8')) }))
    const ordered = [...bundles.filter((b) => b.body.type === 'batch'), ...bundles.filter((b) => b.body.type !== 'batch')]
    expect(ordered[0].body.type).toBe('batch')
    const expected = new Map<string, number>()
    for (const b of bundles) for (const e of b.body.entry) expected.set(e.resource.resourceType, (expected.get(e.resource.resourceType) ?? 0) + 1)

    for (const round of [1, 2]) {
      for (const b of ordered) {
        const res = await s.fhirFetch('', { method: 'POST', body: readFileSync(b.file), headers: { 'content-type': 'application/fhir+json' } })
        const body = await readJson(res)
        if (res.status !== 200) throw new Error(`round ${round} ${b.file}: ${res.status} ${JSON.stringify(body).slice(0, 1000)}`)
        const bad = body.entry.filter((e: any) => !/^20[01] /.test(e.response.status))
        expect({ round, file: b.file, bad: bad.slice(0, 3) }).toEqual({ round, file: b.file, bad: [] })
        if (round === 2 && b.body.type === 'batch') {
          // The second time every conditional create matches what the first created.
          b.body.entry.forEach((e: any, i: number) => {
            if (e.request.ifNoneExist) expect(body.entry[i].response.status).toBe('200 OK')
          })
        }
      }
      const counts = new Map(
        (await s.sql<{ t: string; n: number }[]>`select res_type as t, count(*)::int as n from resource where not deleted group by res_type`).map((r) => [
          r.t,
          r.n,
        ]),
      )
      const want = new Map([...expected].map(([t, n]) => [t, CONDITIONAL.has(t) || round === 1 ? n : n * round]))
      expect(Object.fromEntries(counts)).toEqual(Object.fromEntries(want))
    }

    // No two Organizations, Practitioners or Locations share an identifier.
    const dups = await s.sql<{ t: string; v: string; n: number }[]>`
      select r.res_type as t, i ->> 'value' as v, count(*)::int as n
      from resource r, jsonb_array_elements(r.content::jsonb -> 'identifier') i
      where r.res_type in ('Organization', 'Practitioner', 'Location') and not r.deleted
      group by 1, 2, i ->> 'system' having count(*) > 1`
    expect([...dups]).toEqual([])

    // Every Encounter's conditional references point at the resource with that identifier.
    const identifierOf = new Map(
      (
        await s.sql<{ k: string; sys: string; v: string }[]>`
          select r.res_type || '/' || r.id as k, i ->> 'system' as sys, i ->> 'value' as v
          from resource r, jsonb_array_elements(r.content::jsonb -> 'identifier') i
          where r.res_type in ('Organization', 'Practitioner', 'Location') and not r.deleted`
      ).map((r) => [r.k, `${r.sys}|${r.v}`]),
    )
    const sentByEncounter = new Map<string, any>()
    for (const b of bundles)
      for (const e of b.body.entry) if (e.resource.resourceType === 'Encounter') sentByEncounter.set(encounterKey(e.resource), e.resource)
    const stored = await s.sql<{ content: string }[]>`select content from resource where res_type = 'Encounter' and not deleted`
    expect(stored.length).toBe(2 * sentByEncounter.size)
    let checked = 0
    for (const { content } of stored) {
      const enc = JSON.parse(content)
      const sent = sentByEncounter.get(encounterKey(enc))
      expect(sent).toBeDefined()
      const pairs: [string | undefined, string | undefined][] = [
        [sent.serviceProvider?.reference, enc.serviceProvider?.reference],
        ...(sent.participant ?? []).map((p: any, i: number) => [p.individual?.reference, enc.participant[i].individual?.reference]),
        ...(sent.location ?? []).map((l: any, i: number) => [l.location?.reference, enc.location[i].location?.reference]),
      ]
      for (const [before, after] of pairs) {
        if (!before?.includes('?identifier=')) continue
        expect(after).toMatch(/^(Organization|Practitioner|Location)\/[A-Za-z0-9\-.]+$/)
        expect(identifierOf.get(after as string)).toBe(decodeURIComponent(before.slice(before.indexOf('?identifier=') + '?identifier='.length)))
        checked++
      }
    }
    expect(checked).toBeGreaterThan(1000)
  }, 300_000)
})

/** The identifier that names a Synthea Encounter in both the file and the server. */
function encounterKey(enc: any): string {
  return (enc.identifier ?? []).map((i: any) => `${i.system}|${i.value}`).join(',')
}
