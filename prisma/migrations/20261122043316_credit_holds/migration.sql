-- CreateTable
CREATE TABLE "credit_holds" (
    "job_id" TEXT NOT NULL,
    "user_id" UUID NOT NULL,
    "amount" INTEGER NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "credit_holds_pkey" PRIMARY KEY ("job_id")
);

-- CreateIndex
CREATE INDEX "credit_holds_created_at_idx" ON "credit_holds"("created_at");

-- CreateIndex
CREATE INDEX "credit_holds_user_id_idx" ON "credit_holds"("user_id");

-- AddForeignKey
ALTER TABLE "credit_holds" ADD CONSTRAINT "credit_holds_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- Added by hand (Prisma's schema cannot express CHECK constraints): the ledger refuses a spend the
-- balance does not cover and a metered call never costs more than it reserved, so a negative cached
-- balance can only come from a bug, which must fail loudly rather than be stored.

-- Written by hand: the ledger refuses a spend the balance does not cover and a metered call never costs
-- more than it reserved, so a negative cached balance can only come from a bug, which must fail loudly
-- instead of being stored. A trigger rather than a CHECK constraint because the Wasm schema engine that
-- scripts/migrate.mjs drives crashes while diffing CHECK constraints.
CREATE FUNCTION credit_balance_non_negative() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'credit balance of user % would become negative (%)', NEW.id, NEW.credit_balance
    USING ERRCODE = 'check_violation';
END $$;

CREATE TRIGGER users_credit_balance_non_negative
  BEFORE INSERT OR UPDATE OF credit_balance ON "users"
  FOR EACH ROW WHEN (NEW.credit_balance < 0) EXECUTE FUNCTION credit_balance_non_negative();
