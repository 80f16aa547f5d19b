import { Injectable, type OnModuleInit } from '@nestjs/common';
import { UserHooks } from '../users/user-hooks.js';
import { DisposableDomainsService } from './disposable/disposable-domains.service.js';
import { EmailService } from './email.service.js';

/** E-mail reactions to user lifecycle events (runs in the worker). */
@Injectable()
export class EmailHooks implements OnModuleInit {
  constructor(
    private readonly hooks: UserHooks,
    private readonly email: EmailService,
    private readonly blocklist: DisposableDomainsService,
  ) {}

  onModuleInit(): void {
    // Registered first: later hooks see the flag. Disposable addresses still get transactional mail.
    this.hooks.on('signup', 'disposable-check', async (user) => {
      if (!user.emailDisposable && (await this.blocklist.isDisposable(user.email))) {
        await this.blocklist.flagUser(user.id);
      }
    });
    // A new address is judged afresh, in both directions.
    this.hooks.on('email_changed', 'disposable-check', async (user) => {
      const disposable = await this.blocklist.isDisposable(user.email);
      if (disposable !== user.emailDisposable) await this.blocklist.flagUser(user.id, disposable);
    });
    this.hooks.on('signup', 'welcome-email', async (user) => {
      await this.email.sendTemplate({
        userId: user.id,
        templateKey: 'welcome',
        idempotencyKey: `welcome-${user.id}`,
      });
    });
  }
}
