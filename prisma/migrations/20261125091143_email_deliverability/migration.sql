-- AlterTable
ALTER TABLE "email_messages" ADD COLUMN     "complained_at" TIMESTAMPTZ(3),
ADD COLUMN     "delivery_status" TEXT,
ADD COLUMN     "delivery_updated_at" TIMESTAMPTZ(3);

-- CreateTable
CREATE TABLE "email_suppressions" (
    "email" TEXT NOT NULL,
    "reason" TEXT NOT NULL,
    "source_event_id" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "email_suppressions_pkey" PRIMARY KEY ("email")
);

-- CreateIndex
CREATE INDEX "email_suppressions_created_at_idx" ON "email_suppressions"("created_at");

-- CreateIndex
CREATE INDEX "email_suppressions_reason_created_at_idx" ON "email_suppressions"("reason", "created_at");

-- CreateIndex
CREATE INDEX "email_messages_provider_message_id_idx" ON "email_messages"("provider_message_id");
