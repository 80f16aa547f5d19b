-- The erasure scrub (WebhookInboxRepository.scrubEmailArchive) finds a user's rows among the e-mail
-- provider's (Resend's) events, which the archive keeps raw (SPEC: webhook_events is the archive of raw
-- inbound payloads), by their keys: 'id:' and the provider message id (data.email_id), and 'to:' and each
-- recipient (data.to: an array, or a string in a malformed event) trimmed of ASCII whitespace and
-- lower-cased (Resend reports the address as it was sent, case included). One GIN index on those keys,
-- partial to the e-mail rows so that billing and identity inserts pay nothing, instead of a pass over every
-- e-mail row per erased user. fastupdate off: each e-mail insert updates the index itself (a small, steady
-- cost on the intake statement) rather than queueing entries in a pending list that some later insert must
-- merge and every scrub probe would read in full.
--
-- email_archive_keys is the one definition of the keys: the scrub computes the keys of the erased user's
-- addresses with it too. IMMUTABLE (it reads only its argument), only pg_catalog functions under a fixed
-- search_path (maintenance commands evaluate index expressions under a restricted one). PL/pgSQL, whose
-- plans are cached per session: a SQL function is planned again on every insert (measured: about 10 us of
-- server time per e-mail insert against about 50 us). The whitespace set is spelled with ASCII escapes: a
-- SQL_ASCII database (npm start's embedded PostgreSQL) refuses a non-ASCII literal.
--
-- It replaces 20261207091000_email_archive_projection (withdrawn before any release), which rewrote the
-- archived rows to a projection against that rule; a database that applied it keeps those rows as they
-- are (everything the worker reads is in them) and loses that migration's index here.
DROP INDEX IF EXISTS "webhook_events_email_data_idx";

CREATE FUNCTION email_archive_keys(payload jsonb) RETURNS text[]
  LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog
  AS $$
DECLARE
  keys text[] := '{}';
  data jsonb := payload -> 'data';
  recipients jsonb := data -> 'to';
  recipient jsonb;
BEGIN
  IF jsonb_typeof(data -> 'email_id') IN ('string', 'number') THEN
    keys := keys || ('id:' || (data ->> 'email_id'));
  END IF;
  IF jsonb_typeof(recipients) = 'string' THEN
    recipients := jsonb_build_array(recipients);
  END IF;
  IF jsonb_typeof(recipients) = 'array' THEN
    FOR recipient IN SELECT value FROM jsonb_array_elements(recipients) LOOP
      IF jsonb_typeof(recipient) = 'string' THEN
        keys := keys || ('to:' || lower(btrim(recipient #>> '{}', E' \t\n\x0B\f\r')));
      END IF;
    END LOOP;
  END IF;
  RETURN keys;
END
$$;

CREATE INDEX "webhook_events_email_keys_idx" ON "webhook_events"
  USING gin (email_archive_keys("payload")) WITH (fastupdate = off) WHERE "provider" = 'email';
