import { Injectable, Logger } from '@nestjs/common';
import type { User } from '../../generated/prisma/client.js';

/** Moments in a user's life other modules react to. */
export type UserEvent = 'signup' | 'deletion_requested' | 'email_changed';

export type UserHook = (user: User) => Promise<void>;

/**
 * Extension hooks on user lifecycle events. Modules register hooks at startup (e.g. the Email module
 * adds the welcome e-mail and the disposable-address check on `signup`; Billing cancels the
 * subscription on `deletion_requested`). Jobs run them in the worker after the change committed, so
 * hooks must be idempotent: a retried job runs them again.
 */
@Injectable()
export class UserHooks {
  private readonly logger = new Logger(UserHooks.name);
  private readonly hooks = new Map<UserEvent, Map<string, UserHook>>();

  on(event: UserEvent, name: string, hook: UserHook): void {
    const forEvent = this.hooks.get(event) ?? new Map<string, UserHook>();
    if (forEvent.has(name)) throw new Error(`user hook ${event}/${name} registered twice`);
    forEvent.set(name, hook);
    this.hooks.set(event, forEvent);
  }

  names(event: UserEvent): string[] {
    return [...(this.hooks.get(event)?.keys() ?? [])];
  }

  /**
   * Runs every hook; one failing hook does not stop the others, but fails the job so it is retried. The
   * hooks' errors travel with it (an AggregateError): a hook that failed on an outage makes the job's
   * failure an outage's, which the outbox relay runs again later (infra/queue/job-failure.ts).
   */
  async run(event: UserEvent, user: User): Promise<void> {
    const failures: string[] = [];
    const errors: unknown[] = [];
    for (const [name, hook] of this.hooks.get(event) ?? []) {
      try {
        await hook(user);
      } catch (err) {
        this.logger.error(
          { hook: name, event, err: (err as Error).message, user_id: user.id },
          'user hook failed',
        );
        failures.push(name);
        errors.push(err);
      }
    }
    if (failures.length > 0)
      throw new AggregateError(errors, `${event} hooks failed: ${failures.join(', ')}`);
  }
}
