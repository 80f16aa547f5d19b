import { Injectable, type OnModuleInit } from '@nestjs/common';
import { UserHooks } from '../users/user-hooks.js';
import { EmailService } from './email.service.js';

/** E-mail reactions to user lifecycle events (runs in the worker). */
@Injectable()
export class EmailHooks implements OnModuleInit {
  constructor(
    private readonly hooks: UserHooks,
    private readonly email: EmailService,
  ) {}

  onModuleInit(): void {
    this.hooks.on('signup', 'welcome-email', async (user) => {
      await this.email.sendTemplate({
        userId: user.id,
        templateKey: 'welcome',
        idempotencyKey: `welcome-${user.id}`,
      });
    });
  }
}
