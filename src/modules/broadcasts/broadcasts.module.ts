import { Module } from '@nestjs/common';
import { EmailModule } from '../email/email.module.js';
import { BroadcastDispatcher } from './broadcast-dispatcher.js';
import { BroadcastRecorder } from './broadcast-recorder.js';
import { BroadcastSender } from './broadcast-sender.js';
import { BroadcastsRepository } from './broadcasts.repository.js';
import { BroadcastsService } from './broadcasts.service.js';

@Module({
  imports: [EmailModule],
  providers: [
    BroadcastsService,
    BroadcastsRepository,
    BroadcastDispatcher,
    BroadcastSender,
    BroadcastRecorder,
  ],
  exports: [BroadcastsService, BroadcastDispatcher, BroadcastsRepository],
})
export class BroadcastsModule {}
