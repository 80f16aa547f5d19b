-- AlterTable
ALTER TABLE "subscriptions" ADD COLUMN     "pending_tier" TEXT,
ADD COLUMN     "pending_tier_at" TIMESTAMPTZ(3);

-- CreateIndex
CREATE INDEX "subscriptions_pending_tier_at_idx" ON "subscriptions"("pending_tier_at");
