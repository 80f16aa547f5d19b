import { Module } from '@nestjs/common';
import { CreditHoldsRepository } from './credit-holds.repository.js';
import { CreditsReconciler } from './credits.reconciler.js';
import { CreditsRepository } from './credits.repository.js';
import { CreditsService } from './credits.service.js';
import { MeteredCreditsService } from './metered-credits.service.js';

@Module({
  providers: [
    CreditsService,
    CreditsRepository,
    CreditHoldsRepository,
    MeteredCreditsService,
    CreditsReconciler,
  ],
  exports: [CreditsService, CreditsRepository, MeteredCreditsService, CreditsReconciler],
})
export class CreditsModule {}
