import { Module } from '@nestjs/common';
import { CreditsRepository } from './credits.repository.js';
import { CreditsService } from './credits.service.js';

@Module({ providers: [CreditsService, CreditsRepository], exports: [CreditsService, CreditsRepository] })
export class CreditsModule {}
