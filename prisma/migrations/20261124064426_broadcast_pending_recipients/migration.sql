-- Broadcast recipients are reserved as `pending` (with the key of their batch request) before the
-- provider is called, so a resumed run resends exactly that batch. The partial index the resume reads
-- through is in the next migration: a new enum value cannot be used in the transaction that adds it.

-- AlterEnum
ALTER TYPE "BroadcastRecipientStatus" ADD VALUE 'pending';

-- AlterTable
ALTER TABLE "broadcast_recipients" ADD COLUMN     "batch_key" TEXT;
