import { Module } from '@nestjs/common';
import { CreditsReconciler } from './credits.reconciler.js';
import { CreditsRepository } from './credits.repository.js';
import { CreditsService } from './credits.service.js';
import { MeteredCreditsService } from './metered-credits.service.js';

@Module({
  providers: [CreditsService, CreditsRepository, MeteredCreditsService, CreditsReconciler],
  exports: [CreditsService, CreditsRepository, MeteredCreditsService, CreditsReconciler],
})
export class CreditsModule {}
