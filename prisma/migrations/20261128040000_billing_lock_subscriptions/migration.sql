-- Issue 15 item 3: the webhook worker locks and reads all the subscriptions of a batch of events in one round
-- trip (it replaces billing_lock_subscription, the one-subscription form). The subscriptions' advisory locks
-- (the key SubscriptionsRepository.lock uses) are taken by one statement in the order of their ids (the
-- sorted subquery feeds them in that order); a second statement then reads the rows and locks their users
-- FOR UPDATE in the order of theirs. Two batches sharing subscriptions or users wait for each other instead
-- of deadlocking, and the order every billing writer keeps (subscription, then user) holds. Each statement
-- of a VOLATILE function gets a fresh snapshot, so the read, taken after the lock waits, sees what the
-- previous lock holders committed, rows they inserted included; a user row changed by a transaction it
-- waited for is re-read before it is returned. A subscription not stored yet returns no row (its lock is
-- still held). With p_lock_owner false the users are neither locked nor returned.
CREATE FUNCTION billing_lock_subscriptions(p_provider_subscription_ids text[], p_lock_owner boolean)
RETURNS TABLE (subscription subscriptions, owner users)
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended('billing-subscription:' || k.id, 0))
  FROM (SELECT DISTINCT x AS id FROM unnest(p_provider_subscription_ids) AS x ORDER BY 1) AS k;
  IF p_lock_owner THEN
    RETURN QUERY
      SELECT s, u
      FROM subscriptions s
      JOIN users u ON u.id = s.user_id
      WHERE s.provider_subscription_id = ANY (p_provider_subscription_ids)
      ORDER BY u.id
      FOR UPDATE OF u;
  ELSE
    RETURN QUERY
      SELECT s, NULL::users
      FROM subscriptions s
      WHERE s.provider_subscription_id = ANY (p_provider_subscription_ids);
  END IF;
END
$$;

DROP FUNCTION billing_lock_subscription(text, boolean);
