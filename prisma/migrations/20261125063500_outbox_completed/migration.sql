-- AlterTable
ALTER TABLE "outbox" ADD COLUMN "completed_at" TIMESTAMPTZ(3);

-- Entries dispatched over a day ago belong to jobs BullMQ has already finished and forgotten (completed
-- jobs are kept 24 h): they are done, not lost. Without this the relay would push every one of them again.
UPDATE "outbox" SET "completed_at" = "dispatched_at"
WHERE "dispatched_at" IS NOT NULL AND "dispatched_at" < now() - interval '1 day';

-- The entries the relay checks against BullMQ: dispatched, not seen completed. Partial, so it stays as small
-- as the jobs in flight (Prisma's schema language cannot express it; its diff leaves it alone).
CREATE INDEX "outbox_open_idx" ON "outbox"("dispatched_at") WHERE "completed_at" IS NULL AND "dispatched_at" IS NOT NULL;
