import { BullModule } from '@nestjs/bullmq';
import { Module } from '@nestjs/common';
import { QUEUES } from '../../infra/queue/queues.js';
import { UsersModule } from '../users/users.module.js';
import { EmailHooks } from './email.hooks.js';
import { EmailModule } from './email.module.js';
import { EmailProcessor } from './email.processor.js';
import { EmailScheduler } from './email.scheduler.js';

@Module({
  imports: [EmailModule, UsersModule, BullModule.registerQueue({ name: QUEUES.email })],
  providers: [EmailProcessor, EmailHooks, EmailScheduler],
})
export class EmailWorkerModule {}
