-- AlterTable
ALTER TABLE "subscriptions" ADD COLUMN     "last_event_id" TEXT;
