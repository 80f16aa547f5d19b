import { Module } from '@nestjs/common';
import { BroadcastsController } from './broadcasts.controller.js';
import { BroadcastsModule } from './broadcasts.module.js';

@Module({ imports: [BroadcastsModule], controllers: [BroadcastsController] })
export class BroadcastsHttpModule {}
