import { Module } from '@nestjs/common';
import { EmailModule } from './email.module.js';
import { UnsubscribeController } from './unsubscribe.controller.js';

@Module({ imports: [EmailModule], controllers: [UnsubscribeController] })
export class EmailHttpModule {}
