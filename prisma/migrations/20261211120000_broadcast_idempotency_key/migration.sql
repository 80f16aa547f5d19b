-- POST /api/v1/admin/broadcasts takes an Idempotency-Key: the run keeps the key its admin sent and the
-- fingerprint of the request. Nullable columns (no table rewrite); existing runs have no key.
-- AlterTable
ALTER TABLE "broadcast_runs" ADD COLUMN     "idempotency_key" TEXT,
ADD COLUMN     "request_hash" TEXT;

-- One run per admin and key (NULL keys never collide).
-- CreateIndex
CREATE UNIQUE INDEX "broadcast_runs_created_by_idempotency_key_key" ON "broadcast_runs"("created_by", "idempotency_key");
