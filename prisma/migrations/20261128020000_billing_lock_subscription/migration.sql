-- Issue 15 item 3: the webhook worker's locks and first read of a subscription event in one round trip.
-- Takes the subscription's advisory lock (the key SubscriptionsRepository.lock uses), reads the row, then
-- locks its user's row (the order every billing writer keeps: subscription, then user). Each read is a
-- statement of its own inside a VOLATILE function, so it gets a fresh snapshot taken after the lock wait:
-- it sees what the previous lock holder committed, a row it inserted included. One statement of the caller
-- could not: its snapshot would predate the wait. No row when the subscription is not stored yet. With
-- p_lock_owner false the user row is neither locked nor returned (a caller that locks other rows first).
CREATE FUNCTION billing_lock_subscription(p_provider_subscription_id text, p_lock_owner boolean)
RETURNS TABLE (subscription subscriptions, owner users)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  s subscriptions;
  u users;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended('billing-subscription:' || p_provider_subscription_id, 0));
  SELECT * INTO s FROM subscriptions WHERE provider_subscription_id = p_provider_subscription_id;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  IF p_lock_owner THEN
    SELECT * INTO u FROM users WHERE id = s.user_id FOR UPDATE;
  END IF;
  subscription := s;
  owner := u;
  RETURN NEXT;
END
$$;
