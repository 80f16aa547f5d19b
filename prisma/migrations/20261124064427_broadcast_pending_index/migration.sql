-- The pending recipients of a run, grouped by batch: what a resumed broadcast sends first. Partial, so it
-- stays as small as the in-flight batches (Prisma's schema language cannot express it; its diff leaves it
-- alone, so migrate.mjs check stays clean).
CREATE INDEX "broadcast_recipients_pending_idx" ON "broadcast_recipients"("run_id", "batch_key") WHERE "status" = 'pending';
