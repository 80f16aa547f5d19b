-- AlterTable
ALTER TABLE "credit_holds" ADD COLUMN     "purchased" INTEGER NOT NULL DEFAULT 0;

-- AlterTable
ALTER TABLE "users" ADD COLUMN     "plan_expires_at" TIMESTAMPTZ(3),
ADD COLUMN     "plan_grant_job_id" TEXT,
ADD COLUMN     "plan_grant_starts_at" TIMESTAMPTZ(3),
ADD COLUMN     "purchased_credits" INTEGER NOT NULL DEFAULT 0;

-- Written by hand (issue 18): a claw-back after a refund or chargeback may take a balance below zero.
-- The guard still refuses every other way into (or deeper into) a negative balance: only a transaction
-- that declared the claw-back (set_config('credits.allow_negative', 'on', true), CreditsRepository) may
-- lower a balance below zero, and a negative balance may always move back up (a grant, a settle).
CREATE OR REPLACE FUNCTION credit_balance_non_negative() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'UPDATE' AND NEW.credit_balance >= OLD.credit_balance THEN
    RETURN NEW;
  END IF;
  IF current_setting('credits.allow_negative', true) = 'on' THEN
    RETURN NEW;
  END IF;
  RAISE EXCEPTION 'credit balance of user % would become negative (%)', NEW.id, NEW.credit_balance
    USING ERRCODE = 'check_violation';
END $$;
