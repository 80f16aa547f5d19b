-- DropIndex
DROP INDEX "credit_holds_user_id_idx";

-- CreateIndex
CREATE INDEX "credit_holds_user_id_created_at_idx" ON "credit_holds"("user_id", "created_at");
