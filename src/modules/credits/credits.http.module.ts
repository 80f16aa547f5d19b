import { Module } from '@nestjs/common';
import { CreditsController } from './credits.controller.js';
import { CreditsModule } from './credits.module.js';

@Module({ imports: [CreditsModule], controllers: [CreditsController] })
export class CreditsHttpModule {}
