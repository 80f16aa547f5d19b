-- AlterTable
ALTER TABLE "subscriptions" ADD COLUMN     "period_tier_at" TIMESTAMPTZ(3),
ADD COLUMN     "period_tier_event_id" TEXT,
ADD COLUMN     "period_tier_status" "SubscriptionStatus";

-- The event that set a subscription's tier for its current billing period (decision "Ordering and
-- concurrency"): a late event of the same period (subscription.created after the price change's
-- subscription.updated) corrects the tier to what in-order delivery leaves. Nullable, no default: adding
-- them rewrites nothing. Existing rows stay null = unknown (their tier may come from an event older than
-- the last one applied): they are never corrected, and take a value with the next event of a new period.
