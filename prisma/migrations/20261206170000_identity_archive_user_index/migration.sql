-- The identity archive rows of one identity user, by the `data.id` of their allowlisted payload. Two readers:
-- the identity webhook asks whether the provider deleted the user (a user.deleted delivered before a late
-- user.created; WebhookInboxRepository.latestIdentityDeletion), and the hard delete scrubs the user's rows
-- (scrubIdentityArchive), which scanned every identity row. Partial, so billing and e-mail rows add nothing
-- to it; an expression index: Prisma's schema language cannot express it and its diff leaves it alone
-- (migrate.mjs check stays clean).
CREATE INDEX "webhook_events_identity_user_idx" ON "webhook_events" ((payload->'data'->>'id')) WHERE "provider" = 'identity';
