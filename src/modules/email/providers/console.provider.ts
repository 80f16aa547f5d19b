import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { AppConfig } from '../../../config/app-config.js';
import type { OutboundEmail } from '../email.types.js';
import { EmailProvider, type SendResult } from './email-provider.js';

/**
 * Local default: nothing leaves the machine. The message (with its body) is stored in email_messages by
 * the caller; in development a short notice is printed so the developer knows where to look.
 */
@Injectable()
export class ConsoleEmailProvider extends EmailProvider {
  readonly name = 'console';

  constructor(private readonly config: AppConfig) {
    super();
  }

  async send(message: OutboundEmail): Promise<SendResult> {
    const id = `console_${randomUUID()}`;
    if (this.config.env === 'development') {
      process.stdout.write(
        `\n[email:console] ${id} to=${message.to} subject="${message.subject}"\n${message.text}\n` +
          (message.headers['List-Unsubscribe']
            ? `List-Unsubscribe: ${message.headers['List-Unsubscribe']}\n`
            : ''),
      );
    }
    return { id };
  }

  async sendBatch(messages: OutboundEmail[]): Promise<SendResult[]> {
    const results: SendResult[] = [];
    for (const message of messages) results.push(await this.send(message));
    return results;
  }
}
