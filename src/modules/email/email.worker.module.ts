import { BullModule } from '@nestjs/bullmq';
import { Module } from '@nestjs/common';
import { QUEUES } from '../../infra/queue/queues.js';
import { UsersModule } from '../users/users.module.js';
import { EmailHooks } from './email.hooks.js';
import { EmailModule } from './email.module.js';
import { EmailProcessor } from './email.processor.js';

@Module({
  imports: [EmailModule, UsersModule, BullModule.registerQueue({ name: QUEUES.email })],
  providers: [EmailProcessor, EmailHooks],
})
export class EmailWorkerModule {}
