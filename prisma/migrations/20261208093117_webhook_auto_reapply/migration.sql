-- AlterTable
ALTER TABLE "webhook_events" ADD COLUMN     "auto_reapplies" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN     "retry_at" TIMESTAMPTZ(3);

-- A FAILED event whose failure was a processing failure (not a refused payload) of a provider that opts in
-- (billing) is re-applied automatically at retry_at, through the same exactly-once path as an operator's
-- replay, at most REAPPLY_DELAYS_HOURS.length times (auto_reapplies counts them). Nullable without a
-- default, and a constant default: adding them rewrites nothing. Rows failed before stay as they are
-- (retry_at null): replayable by an operator, as before.
--
-- The relay looks for due rows every 10 seconds: a partial index holds only the FAILED rows that have a
-- retry_at, so the intake statement (the hottest insert) never writes to it, and the look reads only the
-- rows it may reopen, however many refused payloads the archive keeps.
CREATE INDEX "webhook_events_retry_at_idx" ON "webhook_events" ("retry_at")
  WHERE "status" = 'FAILED'::"WebhookEventStatus" AND "retry_at" IS NOT NULL;
