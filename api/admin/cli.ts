// The CLI's way into the process that owns the embedded data directory: `bun run keys` and `bun run orgs`
// send their arguments here (bin/cli-target.ts) and print the answer, so the command runs on the server's own
// database connection and its effects (a new key, a revoked one) hold at once. Only the local token
// written in the owner's lock file (mode 0600, shared/db/data-dir-owner.ts) is accepted: being able to read
// that file is being the user who runs the server.
import { Elysia } from 'elysia'
import { LOCAL_KEY_ID } from '../../shared/auth/api-keys'
import { runKeys } from '../../shared/cli/keys'
import { runOrgs } from '../../shared/cli/orgs'
import { CLI_TOOLS, type CliTool } from '../../shared/cli/output'
import { AppError } from '../../shared/errors'
import type { AppDeps } from '../deps'
import { authenticate } from '../http/auth'
import { requestIdOf } from '../http/request-id'
import { errorResponse, parseJson, respond } from '../patients/org-api'

export function cliRoutes(deps: AppDeps) {
  return new Elysia({ name: 'admin-cli' }).post(
    '/admin/cli',
    async ({ request }) => {
      const requestId = requestIdOf(request)
      try {
        const principal = await authenticate(deps.verifier, request.headers.get('authorization'))
        if (principal.keyId !== LOCAL_KEY_ID)
          throw new AppError('forbidden', 'Only the CLI on this machine (the token in the data directory lock file) may run commands')
        const body = parseJson(await request.text()) as { tool?: unknown; args?: unknown }
        const tool = body?.tool as CliTool
        const args = body?.args
        if (!CLI_TOOLS.includes(tool)) throw new AppError('invalid', `tool must be one of ${CLI_TOOLS.join(', ')}`)
        if (!Array.isArray(args) || !args.every((a) => typeof a === 'string')) throw new AppError('invalid', 'args must be an array of strings')
        const result = tool === 'keys' ? await runKeys(deps, args) : await runOrgs(deps, args)
        return respond({ status: 200, body: JSON.stringify(result) }, requestId)
      } catch (err) {
        return errorResponse(err, requestId, deps.publicBase())
      }
    },
    { parse: 'none' },
  )
}
