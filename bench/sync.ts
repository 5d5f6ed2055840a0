// The connect flow's background pull of the largest synthea-smart patient (705 resources) from a local
// SMART source (the test EHR: a second instance of our server behind a token-checking proxy). Figures:
// callback -> sync finished (records stored, first pull), and a re-sync with nothing changed.
// Run: bun run bench/sync.ts [rounds]
import { startTestServer } from '../tests/harness'
import { call, createOrg, createSource } from '../tests/patients-client'
import { LARGE_PATIENT, LOCAL_EHR, startTestEhr } from '../tests/support/test-ehr'
import { createFlow, pressConnect, throughEhr } from '../tests/support/test-ehr-flow'

const rounds = Number(process.argv[2] ?? 3)
const s = await startTestServer({ ...LOCAL_EHR, CONNECT_RESYNC_INTERVAL_MS: '0', LOG_LEVEL: 'error' })
const ehr = await startTestEhr({ bundleFile: LARGE_PATIENT })
ehr.decision = 'approve'
try {
  const org = await createOrg(s)
  const source = await createSource(s, { name: 'Bench EHR', fhir_base_url: ehr.fhirBase, client_id: ehr.clientId, client_secret: ehr.clientSecret })
  const finished = async (connId: string, after: Date | null) => {
    for (;;) {
      const [r] = await s.sql<{ sync_status: string; last_synced_at: Date | null; sync_total: number }[]>`
        select sync_status, last_synced_at, sync_total from connection where id = ${connId}`
      if (r.sync_status === 'failed') throw new Error('sync failed')
      if (r.sync_status === 'succeeded' && r.last_synced_at?.getTime() !== after?.getTime()) return r
      await Bun.sleep(5)
    }
  }
  for (let i = 0; i < rounds; i++) {
    const patientId = `bench-${i}`
    const flow = await createFlow(s, org, { patient_id: patientId })
    const t0 = performance.now()
    const authorize = await pressConnect(flow, source.id)
    const back = await throughEhr(authorize)
    const t1 = performance.now()
    if (back.status !== 303) throw new Error(`callback answered ${back.status}`)
    const conn = ((await (await call(s, org, `/patient-flows/${flow.id}`)).json()) as any).connections[0]
    const first = await finished(conn.id, null)
    const t2 = performance.now()
    await call(s, org, `/patients/${patientId}/connections/${conn.id}/sync`, { method: 'POST' })
    await finished(conn.id, first.last_synced_at)
    const t3 = performance.now()
    console.log(
      `round ${i + 1}: ${first.sync_total} resources; Connect -> callback ${(t1 - t0).toFixed(0)} ms; ` +
        `callback -> stored ${(t2 - t1).toFixed(0)} ms (end to end ${(t2 - t0).toFixed(0)} ms); re-sync unchanged ${(t3 - t2).toFixed(0)} ms`,
    )
  }
} finally {
  await ehr.stop()
  await s.stop()
}
// Idle BullMQ/Redis handles of the two in-process servers may keep the event loop alive.
process.exit(0)
