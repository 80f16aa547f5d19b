-- Issue 15 item 3: billing_lock_subscriptions in two statements instead of one per subscription plus two.
-- The advisory locks are taken by one statement, in the order of the ids (the sorted subquery feeds them in
-- that order); the rows are then read, and their users locked FOR UPDATE in the order of theirs, by a second
-- statement whose snapshot is taken after the lock waits (a VOLATILE function's statements each take a fresh
-- one), so it sees what the previous lock holders committed. A user row changed by a transaction it waited
-- for is re-read before it is returned. Same contract as 20261128040000.
CREATE OR REPLACE FUNCTION billing_lock_subscriptions(p_provider_subscription_ids text[], p_lock_owner boolean)
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
