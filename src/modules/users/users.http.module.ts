import { Module } from '@nestjs/common';
import { CreditsModule } from '../credits/credits.module.js';
import { WebhooksModule } from '../webhooks/webhooks.module.js';
import { AccountController } from './account.controller.js';
import { AccountExportRepository } from './account-export.repository.js';
import { AccountExportService } from './account-export.service.js';
import { IdentityWebhookController } from './identity-webhook.controller.js';
import { MeController } from './me.controller.js';
import { ProfileService } from './profile.service.js';
import { UsersModule } from './users.module.js';

/** The current user's routes and the identity-provider webhook receiver. */
@Module({
  imports: [UsersModule, CreditsModule, WebhooksModule],
  controllers: [MeController, AccountController, IdentityWebhookController],
  providers: [ProfileService, AccountExportService, AccountExportRepository],
})
export class UsersHttpModule {}
