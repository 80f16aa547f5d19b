-- AlterTable
ALTER TABLE "users" ADD COLUMN     "admin_email" TEXT,
ADD COLUMN     "admin_granted_at" TIMESTAMPTZ(3),
ADD COLUMN     "deleted_via" TEXT,
ADD COLUMN     "email_verified" BOOLEAN NOT NULL DEFAULT false,
ADD COLUMN     "identity_updated_at" TIMESTAMPTZ(3);

-- CreateIndex
CREATE UNIQUE INDEX "users_admin_email_key" ON "users"("admin_email");

-- Backfill: who asked for the deletions pending now (the latest user.deletion_requested entry says).
UPDATE "users" u SET "deleted_via" = (
    SELECT a."details"->>'via' FROM "audit_logs" a
    WHERE a."action" = 'user.deletion_requested' AND a."user_id" = u."identity_user_id"
    ORDER BY a."created_at" DESC LIMIT 1
)
WHERE u."deleted_at" IS NOT NULL;
