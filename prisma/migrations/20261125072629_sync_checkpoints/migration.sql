-- CreateTable
CREATE TABLE "sync_checkpoints" (
    "name" TEXT NOT NULL,
    "checkpoint" TEXT,
    "last_run_at" TIMESTAMPTZ(3),
    "last_run_processed" INTEGER,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "sync_checkpoints_pkey" PRIMARY KEY ("name")
);
