// Bearer API keys -> principal. Missing or unknown keys are 401, too narrow a scope 403.
import { AppError } from '../../shared/errors'
import { type ApiKeyVerifier, hasScope, type Principal, type Scope } from '../../shared/auth/api-keys'

export async function authenticate(verifier: ApiKeyVerifier, authorization: string | null): Promise<Principal> {
  return authenticateNow(verifier, authorization)
}

/** authenticate, answered (or thrown) at once when the key needs no database lookup, else a promise:
 *  the hot path awaits nothing for a known key. */
export function authenticateNow(verifier: ApiKeyVerifier, authorization: string | null): Principal | Promise<Principal> {
  const m = authorization ? /^Bearer\s+(\S+)\s*$/i.exec(authorization) : null
  if (!m) throw new AppError('unauthorized', 'Missing API key: send Authorization: Bearer <API key>')
  const known = verifier.known(m[1])
  if (known) return principalOrRefusal(known.principal)
  return verifier.verify(m[1]).then(principalOrRefusal)
}

function principalOrRefusal(principal: Principal | undefined): Principal {
  if (!principal) throw new AppError('unauthorized', 'Invalid or revoked API key')
  return principal
}

export function authorize(principal: Principal, scope: Scope): void {
  if (!hasScope(principal, scope)) throw new AppError('forbidden', `This API key lacks the "${scope}" scope needed for this request`)
}
