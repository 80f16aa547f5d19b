-- AlterTable
ALTER TABLE "sync_checkpoints" ADD COLUMN     "lease_until" TIMESTAMPTZ(3);

-- The run in progress holds the row until lease_until (claimed at its start, renewed after every page,
-- cleared when it ends): a second replica skips instead of paging the provider's event log again, and a
-- crashed run's lease simply expires. last_run_at keeps its meaning, the start of the last FINISHED run
-- (the stale-backfill alert and the admin stats read it).
