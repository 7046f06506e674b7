/**
 * Policy, enforced in one place: an `onRequest` hook, after authentication, that checks the rule
 * each route declares (RouteSpec.policy, src/api/routing.ts) against the caller's context, before
 * the body is read or validated, so that a caller who may not act learns nothing more than 403.
 * Routes that declare no rule are the public ones (version documents, /healthcheck) and the 405
 * and 404 answers. The target is the caller's own project and user, as in OpenStack Cyborg;
 * which rows a caller sees is decided by the handlers (accelerator requests are project-scoped).
 */
import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  HookHandlerDoneFunction,
} from 'fastify'
import type { Enforcer } from '../policy/index.js'
import type { RouteConfig } from './routing.js'

export function installPolicy(app: FastifyInstance, enforcer: Pick<Enforcer, 'enforce'>): void {
  app.addHook(
    'onRequest',
    (request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction) => {
      const rule = (request.routeOptions.config as RouteConfig | undefined)?.policy
      if (rule === undefined) return done()
      try {
        enforcer.enforce(rule, request.ctx)
        done()
      } catch (err) {
        done(err as Error)
      }
    },
  )
}
