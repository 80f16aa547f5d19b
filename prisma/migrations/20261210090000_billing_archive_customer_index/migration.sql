-- The erasure scrub (WebhookInboxRepository.scrubBillingArchive) finds the erased user's rows among the
-- billing provider's (Paddle's) events, which the archive keeps raw (SPEC: webhook_events is the archive of
-- raw inbound payloads) and which hold personal data: a customer.* event carries the customer's e-mail
-- address and name, a transaction.* event the cardholder's name (payments[].method_details.card). Their key
-- is the provider's customer id: data.customer_id (subscriptions, transactions, adjustments, addresses,
-- businesses), or data.id for a customer.* event (the customer itself). One partial btree index on that key,
-- billing rows only, so identity and e-mail inserts pay nothing.
--
-- billing_archive_customer is the one definition of the key. IMMUTABLE (it reads only its argument), only
-- pg_catalog functions under a fixed search_path, PL/pgSQL for the plan cache (see
-- 20261207092000_email_archive_erasure_keys). A customer id that is not a JSON string (a malformed event)
-- gives no key.
CREATE FUNCTION billing_archive_customer(payload jsonb) RETURNS text
  LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog
  AS $$
DECLARE
  data jsonb := payload -> 'data';
BEGIN
  IF jsonb_typeof(data -> 'customer_id') = 'string' THEN
    RETURN data ->> 'customer_id';
  END IF;
  IF jsonb_typeof(payload -> 'event_type') = 'string' AND starts_with(payload ->> 'event_type', 'customer.')
     AND jsonb_typeof(data -> 'id') = 'string' THEN
    RETURN data ->> 'id';
  END IF;
  RETURN NULL;
END
$$;

CREATE INDEX "webhook_events_billing_customer_idx" ON "webhook_events" (billing_archive_customer("payload"))
  WHERE "provider" = 'billing';
