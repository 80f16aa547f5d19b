-- AlterTable
ALTER TABLE "email_suppressions" ADD COLUMN     "id" UUID NOT NULL DEFAULT gen_random_uuid();

-- CreateIndex
CREATE UNIQUE INDEX "email_suppressions_id_key" ON "email_suppressions"("id");

-- The suppression list's audit entries named the address in resource_id (with user_id null), so the hard
-- delete never reached them and audit retention is indefinite. They name the entry's id now. Entries of
-- an address's current suppression (written with or after its row) get that row's id; the older ones (the
-- address was taken off the list since) get one new id per address, which names no row and no address.
UPDATE "audit_logs" a SET "resource_id" = s."id"::text
FROM "email_suppressions" s
WHERE a."action" IN ('email.suppressed', 'email.unsuppressed') AND a."resource_type" = 'email_suppression'
  AND a."resource_id" = s."email" AND a."created_at" >= s."created_at";

WITH "orphaned" AS (
  SELECT "resource_id" AS "email", gen_random_uuid()::text AS "id" FROM "audit_logs"
  WHERE "action" IN ('email.suppressed', 'email.unsuppressed') AND "resource_type" = 'email_suppression'
    AND "resource_id" LIKE '%@%'
  GROUP BY "resource_id"
)
UPDATE "audit_logs" a SET "resource_id" = o."id"
FROM "orphaned" o
WHERE a."action" IN ('email.suppressed', 'email.unsuppressed') AND a."resource_type" = 'email_suppression'
  AND a."resource_id" = o."email";
