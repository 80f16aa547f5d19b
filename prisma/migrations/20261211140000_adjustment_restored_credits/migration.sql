-- AlterTable
ALTER TABLE "billing_adjustments" ADD COLUMN     "restored_credits" INTEGER;

-- What an approved chargeback_reverse gave back of its transaction's chargeback claw-backs once its restore
-- ran (0: nothing was due, e.g. the credits would have expired, and no ledger row was written). A reverse
-- whose column is set is never restored again, so a later chargeback of the same payment is not given back
-- under it (docs/decisions/billing.md, "the outcome of a won chargeback"). Nullable, no default: adding it
-- rewrites nothing; rows from before stay null and rely on their ledger row, as before.
