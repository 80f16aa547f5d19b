-- Issue 15 item 3: the webhook worker locks and reads all the subscriptions of a batch of events in one round
-- trip (it replaces billing_lock_subscription, the one-subscription form). The subscriptions' advisory locks
-- (the key SubscriptionsRepository.lock uses) are taken in the order of their ids, then their users' rows
-- FOR UPDATE in the order of theirs: two batches sharing subscriptions or users wait for each other instead
-- of deadlocking, and the order every billing writer keeps (subscription, then user) holds. Each statement
-- of a VOLATILE function gets a fresh snapshot taken after the lock waits, so the rows returned are what the
-- previous lock holders committed, rows they inserted included. A subscription not stored yet returns no row
-- (its lock is still held). With p_lock_owner false the users are neither locked nor returned.
CREATE FUNCTION billing_lock_subscriptions(p_provider_subscription_ids text[], p_lock_owner boolean)
RETURNS TABLE (subscription subscriptions, owner users)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  k text;
BEGIN
  FOR k IN SELECT DISTINCT x FROM unnest(p_provider_subscription_ids) AS x ORDER BY x LOOP
    PERFORM pg_advisory_xact_lock(hashtextextended('billing-subscription:' || k, 0));
  END LOOP;
  IF p_lock_owner THEN
    PERFORM 1 FROM users
    WHERE id IN (
      SELECT user_id FROM subscriptions WHERE provider_subscription_id = ANY (p_provider_subscription_ids)
    )
    ORDER BY id
    FOR UPDATE;
  END IF;
  RETURN QUERY
    SELECT s, CASE WHEN p_lock_owner THEN u END
    FROM subscriptions s
    LEFT JOIN users u ON u.id = s.user_id
    WHERE s.provider_subscription_id = ANY (p_provider_subscription_ids);
END
$$;

DROP FUNCTION billing_lock_subscription(text, boolean);
