-- The e-mail provider's (Resend's) events were archived raw: recipient, subject, sender, tags, a click's IP
-- address, user agent and link. The receiver now archives archivableEmailPayload's projection
-- (src/modules/email/deliverability/email-events.ts): the envelope's type and created_at, and of `data`
-- only email_id, `to` (trimmed and lower-cased) and bounce.type, a member of the wrong shape as null. This
-- rewrites the rows archived before to the same projection (the worker and a replay read nothing else), so
-- the erasure scrub finds them through the index below. Rows the erasure already scrubbed
-- ({"redacted": true, "type": ...}) stay as they are. Running it twice changes nothing more.
-- The trim takes ASCII whitespace (JavaScript's trim also takes Unicode spaces, but this script must stay
-- ASCII: a SQL_ASCII database, such as npm start's embedded PostgreSQL, refuses a non-ASCII literal); lower()
-- follows the database's encoding and LC_CTYPE, which for non-ASCII letters may differ from JavaScript's
-- toLowerCase (see decisions/email.md).
UPDATE "webhook_events" w
SET "payload" = CASE WHEN jsonb_typeof(w."payload") <> 'object' THEN '{"not_an_object": true}'::jsonb ELSE (
  SELECT coalesce(jsonb_object_agg(e.key, CASE
    WHEN e.key <> 'data' THEN
      CASE WHEN jsonb_typeof(e.value) IN ('object', 'array') THEN 'null'::jsonb ELSE e.value END
    WHEN jsonb_typeof(e.value) <> 'object' THEN 'null'::jsonb
    ELSE (
      SELECT coalesce(jsonb_object_agg(d.key, CASE d.key
        WHEN 'to' THEN
          CASE WHEN jsonb_typeof(d.value) <> 'array' THEN 'null'::jsonb ELSE (
            SELECT coalesce(jsonb_agg(CASE jsonb_typeof(t.address)
                WHEN 'string' THEN to_jsonb(lower(btrim(t.address #>> '{}', E' \t\n\x0B\f\r')))
                WHEN 'object' THEN 'null'::jsonb
                WHEN 'array' THEN 'null'::jsonb
                ELSE t.address END ORDER BY t.n), '[]'::jsonb)
            FROM jsonb_array_elements(d.value) WITH ORDINALITY AS t(address, n)) END
        WHEN 'bounce' THEN
          CASE WHEN jsonb_typeof(d.value) <> 'object' THEN 'null'::jsonb
               WHEN d.value ? 'type' THEN jsonb_build_object('type',
                 CASE WHEN jsonb_typeof(d.value->'type') IN ('object', 'array') THEN 'null'::jsonb
                      ELSE d.value->'type' END)
               ELSE '{}'::jsonb END
        ELSE
          CASE WHEN jsonb_typeof(d.value) IN ('object', 'array') THEN 'null'::jsonb ELSE d.value END
      END), '{}'::jsonb)
      FROM jsonb_each(e.value) AS d WHERE d.key IN ('email_id', 'to', 'bounce'))
  END), '{}'::jsonb)
  FROM jsonb_each(w."payload") AS e WHERE e.key IN ('type', 'created_at', 'unparsable', 'not_an_object', 'data'))
END
WHERE w."provider" = 'email'
  AND NOT coalesce(CASE WHEN jsonb_typeof(w."payload") = 'object'
                        THEN w."payload" - 'type' = '{"redacted": true}'::jsonb END, false);

-- The erasure scrub (WebhookInboxRepository.scrubEmailArchive) looks the user's rows up by containment,
-- {"email_id": id} and {"to": [address]}, one bitmap index scan per id and address instead of a scan of
-- every e-mail row. Partial, so billing and identity rows add nothing to it. fastupdate off: each e-mail
-- insert updates the index itself (a steady, small cost on the intake statement) rather than queueing in a
-- pending list that some later insert must merge and that every scrub probe would read in full. An
-- expression index Prisma's schema language cannot express; its diff leaves it alone.
CREATE INDEX "webhook_events_email_data_idx" ON "webhook_events"
  USING gin (("payload" -> 'data') jsonb_path_ops) WITH (fastupdate = off) WHERE "provider" = 'email';
