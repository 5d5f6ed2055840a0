// Machine calibration: how fast this machine is right now, so that figures taken on different days (or
// machines) can be compared. The 2-core VM's speed varies by up to 2x between sessions. Prints the
// reference of ../shared/notes/performance.md (a bare Elysia route doing one postgres.js primary-key
// select of a jsonb row at 32 connections, 13,700 req/s when it was measured) and PostgreSQL's CPU speed.
// Usage: bun run bench/calibrate.ts
import { Elysia } from 'elysia'
import { createSql, ensureDatabase } from '../shared/db/client'
import { wrk } from './server'

const pg = process.env.BENCH_PG ?? 'postgres://postgres@127.0.0.1:5432'
const db = `bench_cal_${Date.now().toString(36)}`
await ensureDatabase(`${pg}/${db}`)
const sql = createSql(`${pg}/${db}`, { max: 10 })
try {
  const times: number[] = []
  for (let i = 0; i < 3; i++) {
    const t = performance.now()
    await sql`select count(*) from generate_series(1, 10000000)`
    times.push(performance.now() - t)
  }
  console.log(`PostgreSQL: count(*) over generate_series(1, 1e7): best of 3 ${Math.round(Math.min(...times))} ms`)
  await sql`create table t (id int primary key, doc jsonb not null)`
  await sql`insert into t select i, jsonb_build_object('resourceType', 'Patient', 'id', i::text, 'active', true) from generate_series(1, 1000) i`
  const app = new Elysia().get('/t/:id', async ({ params }) => (await sql`select doc from t where id = ${Number(params.id)}`)[0]?.doc).listen(18099)
  const script = '/tmp/bench-calibrate.lua'
  await Bun.write(script, 'n = 0\nrequest = function()\n  n = n + 1\n  return wrk.format("GET", "/t/" .. ((n % 1000) + 1))\nend\n')
  await wrk('http://127.0.0.1:18099/t/1', { connections: 32, seconds: 2, script })
  const r = await wrk('http://127.0.0.1:18099/t/1', { connections: 32, seconds: 8, script })
  console.log(
    `bare Elysia + postgres.js primary-key select of a jsonb row, 32 connections: ${Math.round(r.rps)} req/s, p50 ${r.p50} ms (13,700 in performance.md)`,
  )
  await app.stop()
} finally {
  await sql.end()
  const admin = createSql(`${pg}/postgres`, { max: 1 })
  await admin`drop database if exists ${admin(db)} with (force)`
  await admin.end()
}
