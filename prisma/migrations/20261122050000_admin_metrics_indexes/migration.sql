-- Admin metrics overview (src/modules/admin/metrics). A partial index: Prisma's schema language cannot
-- express it, and its diff leaves indexes it cannot represent alone (migrate.mjs check stays clean).

-- Lead-magnet funnel: `provenance LIKE 'prefix%'` needs text_pattern_ops under a non-C collation; the
-- included columns make the scan index-only.
CREATE INDEX "users_provenance_prefix_idx" ON "users"("provenance" text_pattern_ops) INCLUDE ("created_at", "id") WHERE "provenance" IS NOT NULL;

-- Lead-magnet paid conversions: the users with a collected payment, read index-only in user order (no
-- hash of every payment). The predicate mirrors COLLECTED_PAYMENT_STATUSES in revenue-metrics.repository.ts.
CREATE INDEX "payments_collected_user_id_idx" ON "payments"("user_id") INCLUDE ("occurred_at") WHERE "status" IN ('completed', 'paid');
