-- CreateIndex
CREATE INDEX "billing_adjustments_provider_transaction_id_idx" ON "billing_adjustments"("provider_transaction_id");
