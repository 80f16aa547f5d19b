import { Module } from '@nestjs/common';
import { WebhooksModule } from '../webhooks/webhooks.module.js';
import { AccountDeletionService } from './account-deletion.service.js';
import { IdentityWebhookService } from './identity-webhook.service.js';
import { UserHooks } from './user-hooks.js';
import { UsersRepository } from './users.repository.js';
import { UsersService } from './users.service.js';

/** Shared by both processes: the API accepts identity webhooks, the worker applies them. */
@Module({
  imports: [WebhooksModule],
  providers: [UsersService, UsersRepository, UserHooks, AccountDeletionService, IdentityWebhookService],
  exports: [UsersService, UsersRepository, UserHooks, AccountDeletionService, IdentityWebhookService],
})
export class UsersModule {}
