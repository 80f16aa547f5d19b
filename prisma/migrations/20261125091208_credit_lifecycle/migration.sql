-- AlterTable
ALTER TABLE "credit_holds" ADD COLUMN     "purchased" INTEGER NOT NULL DEFAULT 0;

-- AlterTable
ALTER TABLE "users" ADD COLUMN     "plan_expires_at" TIMESTAMPTZ(3),
ADD COLUMN     "plan_grant_job_id" TEXT,
ADD COLUMN     "plan_grant_starts_at" TIMESTAMPTZ(3),
ADD COLUMN     "purchased_credits" INTEGER NOT NULL DEFAULT 0;
