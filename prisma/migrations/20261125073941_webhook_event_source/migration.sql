-- AlterTable
ALTER TABLE "webhook_events" ADD COLUMN     "source" TEXT NOT NULL DEFAULT 'delivery';
