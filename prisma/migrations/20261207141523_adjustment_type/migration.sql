-- AlterTable
ALTER TABLE "billing_adjustments" ADD COLUMN     "type" TEXT;

-- The provider's adjustment type (Paddle: `full` or `partial`), written with every adjustment event. A
-- Paddle `full` refund adjusts the transaction's grand total (its total minus customer credit applied), so
-- its `totals.total` can be below the stored payment total; the allowance job and a claw-back applied after
-- the refund was recorded read this column to count an approved full refund or chargeback as the whole
-- payment. Nullable, no default: adding it rewrites nothing. Rows from before (null) count by their amount,
-- as they did.
