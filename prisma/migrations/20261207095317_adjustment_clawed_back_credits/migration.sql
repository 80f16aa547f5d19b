-- AlterTable
ALTER TABLE "billing_adjustments" ADD COLUMN     "clawed_back_credits" INTEGER;

-- What an approved refund or chargeback took back from the credits its transaction granted, written when
-- its claw-back runs (0 when earlier claw-backs of the transaction left nothing to take). A claw-back runs
-- once per adjustment: the ledger row keyed on the adjustment id made it final when it took something, and
-- a 0-credit `clawback` row did when it took nothing. That row is no longer written (it showed in the user's
-- credit history as a claw-back of nothing); this column keeps the claw-back final instead, so a replay
-- after a later month was granted does not take that month back. Nullable, no default: adding it rewrites
-- nothing. Rows from before (null) fall back to the ledger row, as they always did.
