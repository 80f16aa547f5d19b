-- Issue 15: one BullMQ job per intake statement instead of one per event. Every archive row accepted by an
-- intake statement records that statement's transaction id (pg_current_xact_id, unique for the life of the
-- cluster), which names the statement's job (`webhooks-<intake_batch>`). The relay reads it to tell whether
-- a stale RECEIVED row still has a live batch job before it pushes a job of its own. NULL for rows accepted
-- before this migration, whose jobs were per event.
ALTER TABLE webhook_events ADD COLUMN intake_batch bigint;
