// The Elysia application: health endpoints and the FHIR surface, from explicit dependencies.
import { Elysia } from 'elysia'
import type { AppDeps } from './deps'
import { cliRoutes } from './admin/cli'
import { jobAdminRoutes } from './admin/jobs'
import { organizationAdminRoutes } from './admin/organizations'
import { queueDashboard } from './admin/queues'
import { connectRoutes } from './connect/routes'
import { fhirRoutes } from './fhir/routes'
import { metricsRoutes } from './metrics'
import { pageRateLimit } from './page-limit'
import { patientApiRoutes, unknownPath } from './patients/routes'

export async function createApp(deps: AppDeps) {
  return (
    new Elysia()
      // A path no route knows (also one whose dot segments left no route to match, `/patients/..`) is
      // the patient API's (it lives at the root): the 404 envelope with X-Request-Id, not bare text.
      .onError(({ code, request }) => (code === 'NOT_FOUND' ? unknownPath(request, deps.publicBase()) : undefined))
      // Hosted pages and operator endpoints: a limit per client address (the other surfaces limit per key).
      .use(pageRateLimit(deps))
      .get('/healthz', () => ({ status: 'ok' }))
      .get('/readyz', async ({ set }) => {
        const [db, redis] = await Promise.all([
          deps.sql`select 1`.then(
            () => 'ok',
            (e) => `down: ${e.message}`,
          ),
          deps.redis
            ? deps.redis.ping().then(
                () => 'ok',
                (e) => `down: ${e.message}`,
              )
            : Promise.resolve('not configured (jobs run in process)'),
        ])
        const ready = db === 'ok' && !redis.startsWith('down')
        set.status = ready ? 200 : 503
        return { status: ready ? 'ready' : 'not ready', database: db, redis }
      })
      .use(metricsRoutes(deps))
      .use(fhirRoutes(deps))
      .use(jobAdminRoutes(deps))
      .use(await queueDashboard(deps))
      .use(organizationAdminRoutes(deps))
      .use(cliRoutes(deps))
      .use(patientApiRoutes(deps))
      .use(connectRoutes(deps))
  )
}
