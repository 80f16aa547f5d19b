import { Module } from '@nestjs/common';
import { EmailRepository } from './email.repository.js';
import { EmailService } from './email.service.js';
import { EmailTemplates } from './email.templates.js';
import { ConsoleEmailProvider } from './providers/console.provider.js';
import { EmailProvider } from './providers/email-provider.js';
import { UnsubscribeTokens } from './unsubscribe-tokens.js';

@Module({
  providers: [
    EmailService,
    EmailRepository,
    EmailTemplates,
    UnsubscribeTokens,
    { provide: EmailProvider, useClass: ConsoleEmailProvider },
  ],
  exports: [EmailService, EmailTemplates, UnsubscribeTokens],
})
export class EmailModule {}
