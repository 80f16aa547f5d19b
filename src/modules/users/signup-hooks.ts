import { Injectable, Logger } from '@nestjs/common';
import type { User } from '../../generated/prisma/client.js';

export type SignupHook = (user: User) => Promise<void>;

/**
 * Post-signup extension hooks. Modules register hooks at startup (the Email module adds the welcome
 * e-mail and the disposable-address check); the users/post-signup job runs them in the worker after the
 * user row committed. Hooks must be idempotent: a retried job runs them again.
 */
@Injectable()
export class SignupHooks {
  private readonly logger = new Logger(SignupHooks.name);
  private readonly hooks = new Map<string, SignupHook>();

  register(name: string, hook: SignupHook): void {
    if (this.hooks.has(name)) throw new Error(`signup hook ${name} registered twice`);
    this.hooks.set(name, hook);
  }

  names(): string[] {
    return [...this.hooks.keys()];
  }

  /** Runs every hook; one failing hook does not stop the others, but fails the job so it is retried. */
  async run(user: User): Promise<void> {
    const failures: string[] = [];
    for (const [name, hook] of this.hooks) {
      try {
        await hook(user);
      } catch (err) {
        this.logger.error(
          { hook: name, err: (err as Error).message, user_id: user.id },
          'signup hook failed',
        );
        failures.push(name);
      }
    }
    if (failures.length > 0) throw new Error(`signup hooks failed: ${failures.join(', ')}`);
  }
}
