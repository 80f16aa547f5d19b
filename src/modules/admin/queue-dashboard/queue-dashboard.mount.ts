import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import { Logger } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { Queue } from 'bullmq';
import type { NextFunction, Request, Response } from 'express';
import type { AppConfig } from '../../../config/app-config.js';
import { ForbiddenError, UnauthenticatedError } from '../../../common/errors/app-error.js';
import { sendProblem, toProblem } from '../../../common/filters/problem-details.filter.js';
import { QueueService } from '../../../infra/queue/queue.service.js';
import { AuditService, userActor } from '../../audit/audit.service.js';
import { AdminGuard } from '../../auth/admin.guard.js';
import { UsersService } from '../../users/users.service.js';
import { boardProblem, dashboardInputRefusal, isBoardError } from './queue-dashboard.errors.js';
import {
  type DashboardIdentity,
  QueueDashboardSessions,
  SESSION_TTL_SECONDS,
} from './queue-dashboard.sessions.js';

/** Outside /api/v1 like /docs: a browser page, not an API. */
export const QUEUE_DASHBOARD_PATH = '/admin/queues';
export const SESSION_COOKIE = 'queue_dashboard_session';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * The changes the dashboard may make, all of them ones BullMQ itself offers an operator: retry failed
 * jobs, run delayed ones now, pause and resume queues. Adding jobs, editing job data, cleaning, emptying
 * or obliterating queues would bypass the outbox, the job handlers' rules and the audit trail: refused.
 */
const ALLOWED_ACTIONS: { method: string; path: RegExp; action: string }[] = [
  { method: 'PUT', path: /^\/api\/queues\/(pause|resume)$/, action: 'queues_$1' },
  { method: 'PUT', path: /^\/api\/queues\/[^/]+\/(pause|resume)$/, action: 'queue_$1' },
  { method: 'PUT', path: /^\/api\/queues\/[^/]+\/retry\/[^/]+$/, action: 'retry_all' },
  { method: 'PUT', path: /^\/api\/queues\/[^/]+\/promote$/, action: 'promote_all' },
  { method: 'PUT', path: /^\/api\/queues\/[^/]+\/[^/]+\/retry$/, action: 'retry_job' },
  { method: 'PUT', path: /^\/api\/queues\/[^/]+\/[^/]+\/promote$/, action: 'promote_job' },
];

export function allowedAction(method: string, path: string): string | null {
  for (const rule of ALLOWED_ACTIONS) {
    const match = rule.method === method ? rule.path.exec(path) : null;
    if (match) return rule.action.replace('$1', match[1] ?? '');
  }
  return null;
}

function cookieValue(header: string | undefined, name: string): string | null {
  for (const part of (header ?? '').split(';')) {
    const at = part.indexOf('=');
    if (at > 0 && part.slice(0, at).trim() === name) return part.slice(at + 1).trim();
  }
  return null;
}

/**
 * A request that can change something must come from the dashboard's own page: browsers say where a
 * request comes from (Sec-Fetch-Site, Origin); a client that sends neither is not a browser a page could
 * have tricked. The SameSite=Lax cookie already stays home on cross-site PUTs; this is the second lock.
 */
function fromOwnPage(req: Request, publicBaseUrl: string): boolean {
  const site = req.headers['sec-fetch-site'];
  if (site !== undefined) return site === 'same-origin';
  const origin = req.headers.origin;
  if (origin === undefined) return true;
  return origin === new URL(publicBaseUrl).origin || origin === `${req.protocol}://${req.headers.host}`;
}

/**
 * Mounts the BullMQ dashboard (@bull-board) at /admin/queues when QUEUE_DASHBOARD allows it. Browsers do
 * not send Bearer tokens on navigation, so the page is reached through a one-time link
 * (POST /api/v1/admin/queue-dashboard/session) that sets an HttpOnly session cookie scoped to this path.
 * Every request re-checks the admin allowlist (AdminGuard) for the session's user, exactly as an admin
 * route would; changes are limited to ALLOWED_ACTIONS and audited `admin.queue_action`.
 */
export function mountQueueDashboard(app: NestExpressApplication, config: AppConfig): void {
  if (!config.queueDashboard) return;
  const logger = new Logger('QueueDashboard');
  const sessions = app.get(QueueDashboardSessions);
  const users = app.get(UsersService);
  const admins = app.get(AdminGuard);
  const audit = app.get(AuditService);
  const queues = app.get(QueueService);

  const serverAdapter = new ExpressAdapter().setBasePath(QUEUE_DASHBOARD_PATH);
  let mounted: Queue[] = queues.allQueueNames().map((name) => queues.queue(name));
  const adapters = (list: Queue[]) => list.map((queue) => new BullMQAdapter(queue, { allowRetries: true }));
  const board = createBullBoard({
    queues: adapters(mounted),
    serverAdapter,
    options: { uiConfig: { boardTitle: `${config.project.projectSlug} queues` } },
  });
  // bull-board answers what its handlers throw itself, with the error's message (a 500 quoting it); thrown
  // on instead, it reaches `failed` below, which answers it like the API's filter does.
  serverAdapter.setErrorHandler((err: Error) => {
    throw err;
  });
  // QueueService replaces a queue that was created while Redis was down; show the replacement.
  const current = () => {
    const now = queues.allQueueNames().map((name) => queues.queue(name));
    if (now.some((queue, i) => queue !== mounted[i])) {
      mounted = now;
      board.replaceQueues(adapters(now));
    }
  };

  const secure = config.email.publicBaseUrl.startsWith('https://') ? '; Secure' : '';
  const cookie = (value: string, maxAge: number) =>
    `${SESSION_COOKIE}=${value}; Path=${QUEUE_DASHBOARD_PATH}; Max-Age=${maxAge}; HttpOnly; SameSite=Lax${secure}`;

  const authorize = async (identity: DashboardIdentity, req: Request) => {
    const user = await users.findByIdentityId(identity.identityUserId);
    if (!user) throw new UnauthenticatedError('Unknown user.', 'unknown_user');
    if (user.deletedAt)
      throw new ForbiddenError('This account is scheduled for deletion.', 'account_deleted');
    await admins.authorize({ user, via: identity.via, emailVerified: user.emailVerified }, req);
    return user;
  };

  const gate = async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    // The page resolves its scripts against <base href="/admin/queues/">: the one relaxation of the
    // site-wide policy (base-uri 'none') it needs, on its own path only.
    const policy = res.getHeader('Content-Security-Policy');
    if (typeof policy === 'string')
      res.setHeader('Content-Security-Policy', policy.replace("base-uri 'none'", "base-uri 'self'"));
    try {
      if (req.path === '/login' && req.method === 'GET') {
        const ticket = typeof req.query.ticket === 'string' ? req.query.ticket : '';
        const redeemed = await sessions.redeem(ticket);
        if (!redeemed)
          throw new UnauthenticatedError(
            'This sign-in link is invalid, used or expired: ask for a new one (POST /api/v1/admin/queue-dashboard/session).',
            'invalid_ticket',
          );
        try {
          await authorize(redeemed.identity, req);
        } catch (err) {
          await sessions.revoke(redeemed.sessionId);
          throw err;
        }
        res.setHeader('Set-Cookie', cookie(redeemed.sessionId, SESSION_TTL_SECONDS));
        res.setHeader('Cache-Control', 'no-store');
        res.redirect(303, `${QUEUE_DASHBOARD_PATH}/`);
        return;
      }
      const sessionId = cookieValue(req.headers.cookie, SESSION_COOKIE);
      const identity = sessionId ? await sessions.session(sessionId) : null;
      if (!sessionId || !identity)
        throw new UnauthenticatedError(
          'Sign in to the queue dashboard with a link from POST /api/v1/admin/queue-dashboard/session.',
          'dashboard_session_required',
        );
      if (req.path === '/logout' && req.method === 'GET') {
        await sessions.revoke(sessionId);
        res.setHeader('Set-Cookie', cookie('', 0));
        res.status(204).end();
        return;
      }
      let user;
      try {
        user = await authorize(identity, req);
      } catch (err) {
        // Rights lost since the sign-in (allowlist, account): the session ends with them.
        if (err instanceof ForbiddenError) await sessions.revoke(sessionId);
        throw err;
      }
      res.setHeader('Cache-Control', 'no-store');
      const refusal = dashboardInputRefusal(req.url);
      if (refusal) throw refusal;
      if (!SAFE_METHODS.has(req.method)) {
        if (!fromOwnPage(req, config.email.publicBaseUrl))
          throw new ForbiddenError(
            'Queues can only be changed from the dashboard page itself.',
            'cross_site_request',
          );
        const action = allowedAction(req.method, req.path);
        if (!action)
          throw new ForbiddenError(
            'The dashboard may retry, promote, pause and resume jobs only; other changes go through the API.',
            'queue_action_not_allowed',
          );
        const [, , , queue = '', job] = req.path.split('/');
        res.on('finish', () => {
          if (res.statusCode >= 400) return;
          audit
            .recordStandalone({
              actor: userActor(user.identityUserId),
              action: 'admin.queue_action',
              userId: user.identityUserId,
              resourceType: 'queue',
              resourceId: decodeURIComponent(queue),
              details: {
                action,
                method: req.method,
                path: `${QUEUE_DASHBOARD_PATH}${req.path}`,
                ...(action.endsWith('_job') && job ? { job_id: decodeURIComponent(job) } : {}),
              },
            })
            .catch((err: Error) => logger.warn({ err: err.message, action }, 'queue action audit failed'));
        });
      }
      if (req.path.startsWith('/api/')) answerErrorsAsProblems(req, res);
      current();
      next();
    } catch (err) {
      const { problem, headers } = toProblem(err, requestId(req));
      sendProblem(res, problem, headers);
    }
  };

  /** bull-board's error answers (`{error: {key}}` as application/json) become problem+json. */
  const answerErrorsAsProblems = (req: Request, res: Response) => {
    const json = res.json.bind(res);
    res.json = ((body: unknown) => {
      if (res.statusCode < 400 || !isBoardError(body)) return json(body);
      const problem = boardProblem(res.statusCode, body, requestId(req));
      if (problem.status >= 500)
        logger.error(
          { request_id: problem.request_id, code: problem.code },
          'queue dashboard request failed',
        );
      sendProblem(res, problem);
      return res;
    }) as Response['json'];
  };

  const failed = (err: unknown, req: Request, res: Response, _next: NextFunction): void => {
    const { problem, headers } = toProblem(err, requestId(req));
    if (problem.status >= 500)
      logger.error(
        { err, request_id: problem.request_id, status: problem.status, code: problem.code },
        'queue dashboard request failed',
      );
    sendProblem(res, problem, headers);
  };

  app.use(QUEUE_DASHBOARD_PATH, gate, serverAdapter.getRouter(), failed);
}

const requestId = (req: Request): string | undefined => (req as Request & { id?: string }).id;
