-- Admin metrics overview (src/modules/admin/metrics). A partial index: Prisma's schema language cannot
-- express it, and its diff leaves indexes it cannot represent alone (migrate.mjs check stays clean).

-- Lead-magnet funnel: `provenance LIKE 'prefix%'` needs text_pattern_ops under a non-C collation; the
-- included columns make the scan index-only.
CREATE INDEX "users_provenance_prefix_idx" ON "users"("provenance" text_pattern_ops) INCLUDE ("created_at", "id") WHERE "provenance" IS NOT NULL;

