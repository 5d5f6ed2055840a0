// The queue dashboard for operators (Bull Board) at /admin/queues, behind the admin scope. It takes
// the API key as the password of HTTP Basic authentication too, so a browser can open it. It shows
// every queue found in Redis under our prefix (refreshed when the page is opened).
import { createBullBoard } from '@bull-board/api'
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter'
import { ElysiaAdapter } from '@bull-board/elysia'
import { Queue } from 'bullmq'
import { Elysia } from 'elysia'
import { queueNames } from '../../shared/jobs/queue-names'
import type { AppDeps } from '../deps'
import { adminError } from './errors'
import { adminGuard } from './jobs'
import { pathOf } from '../http/url-path'

const BASE = '/admin/queues'

export async function queueDashboard(deps: AppDeps) {
  const redis = deps.redis
  if (!redis)
    return new Elysia({ name: 'queue-dashboard' }).get(
      BASE,
      () => new Response('No REDIS_URL: jobs run in process, there are no queues to show', { status: 404 }),
    )
  const requireAdmin = adminGuard(deps)
  const adapter = new ElysiaAdapter(BASE)
  const board = createBullBoard({ queues: [], serverAdapter: adapter })
  const known = new Set<string>()
  const refresh = async () => {
    for (const name of await queueNames(redis, deps.config.queuePrefix)) {
      if (known.has(name)) continue
      known.add(name)
      board.addQueue(new BullMQAdapter(new Queue(name, { connection: redis, prefix: deps.config.queuePrefix })))
    }
  }
  const plugin = await adapter.registerPlugin()
  return new Elysia({ name: 'queue-dashboard' })
    .onRequest(async ({ request }) => {
      const path = pathOf(request.url)
      if (path !== BASE && !path.startsWith(`${BASE}/`)) return
      try {
        await requireAdmin(request.headers.get('authorization'))
      } catch (err) {
        const res = adminError(err, request, deps.publicBase())
        if (res.status === 401) res.headers.set('www-authenticate', 'Basic realm="queues", charset="UTF-8"')
        return res
      }
      if (path === BASE || path === `${BASE}/` || path === `${BASE}/api/queues`) await refresh()
    })
    .use(plugin)
}
