-- AlterTable
ALTER TABLE "credit_holds" ADD COLUMN     "plan_job_id" TEXT;

-- AlterTable
ALTER TABLE "users" ADD COLUMN     "plan_carried_credits" INTEGER,
ADD COLUMN     "plan_period_job_id" TEXT;

-- A reservation open while the next plan allowance closes the current one (docs/decisions/credits.md,
-- "a reservation open across the renewal"): the hold records the allowance it was made under, so the
-- plan credits its settle or refund gives back after the close expire under that allowance's rollover
-- rule instead of joining the new allowance; users.plan_carried_credits is the cap's room used so far,
-- users.plan_period_job_id the allowance that last closed plan credits (a catch-up month closes none).
-- Nullable, no default: adding them rewrites nothing; existing holds and users stay null (treated as
-- before: nothing known to expire, nothing carried).
