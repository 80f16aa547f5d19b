import { Injectable } from '@nestjs/common';
import { createHash, randomBytes } from 'node:crypto';
import { RedisService } from '../../../infra/redis/redis.service.js';
import type { Principal } from '../../../common/principal.js';

/** A login link is good for one use within a minute: it travels through a URL. */
export const TICKET_TTL_SECONDS = 60;
/** A dashboard session lasts an hour; the allowlist is checked again on every request meanwhile. */
export const SESSION_TTL_SECONDS = 3600;

export interface DashboardIdentity {
  identityUserId: string;
  via: Principal['via'];
}

const digest = (secret: string) => createHash('sha256').update(secret).digest('hex');

/**
 * Login tickets and sessions of the queue dashboard, in Redis (shared by every API replica). Only the
 * SHA-256 of a ticket or session id is stored, so a Redis dump holds nothing that opens the dashboard.
 */
@Injectable()
export class QueueDashboardSessions {
  constructor(private readonly redis: RedisService) {}

  /** A one-time ticket for an admin who authenticated with a Bearer JWT. */
  async issueTicket(identity: DashboardIdentity): Promise<{ ticket: string; expiresAt: Date }> {
    const ticket = randomBytes(32).toString('base64url');
    await this.redis.client.set(
      this.redis.key('queue-dashboard', 'ticket', digest(ticket)),
      JSON.stringify(identity),
      'EX',
      TICKET_TTL_SECONDS,
    );
    return { ticket, expiresAt: new Date(Date.now() + TICKET_TTL_SECONDS * 1000) };
  }

  /** Trades a ticket (once) for a session id; null when the ticket is unknown, used or expired. */
  async redeem(ticket: string): Promise<{ sessionId: string; identity: DashboardIdentity } | null> {
    if (!/^[A-Za-z0-9_-]{43}$/.test(ticket)) return null;
    const raw = await this.redis.client.getdel(this.redis.key('queue-dashboard', 'ticket', digest(ticket)));
    if (!raw) return null;
    const identity = JSON.parse(raw) as DashboardIdentity;
    const sessionId = randomBytes(32).toString('base64url');
    await this.redis.client.set(this.sessionKey(sessionId), raw, 'EX', SESSION_TTL_SECONDS);
    return { sessionId, identity };
  }

  async session(sessionId: string): Promise<DashboardIdentity | null> {
    if (!/^[A-Za-z0-9_-]{43}$/.test(sessionId)) return null;
    const raw = await this.redis.client.get(this.sessionKey(sessionId));
    return raw ? (JSON.parse(raw) as DashboardIdentity) : null;
  }

  async revoke(sessionId: string): Promise<void> {
    await this.redis.client.del(this.sessionKey(sessionId));
  }

  private sessionKey(sessionId: string): string {
    return this.redis.key('queue-dashboard', 'session', digest(sessionId));
  }
}
