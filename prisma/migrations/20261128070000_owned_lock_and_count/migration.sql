-- Issue 15 item 6: an owned resource's create (saved searches, workspaces, API keys) is one statement instead
-- of a transaction of five (lock, count, insert, audit, commit). The tier limit needs its count taken after
-- the owner's advisory lock is held, and a statement's own snapshot is older than that wait; each statement
-- of a VOLATILE function takes a fresh snapshot, so this function takes the lock (the key the create path
-- always used) and then counts, seeing every row a previous lock holder committed. The lock is held until
-- the calling statement's transaction ends, after its insert. p_count_sql is one of OwnedRepository's
-- constant count statements (table and condition from the code, never from a request); $1 is the owner.
CREATE FUNCTION owned_lock_and_count(p_lock_key text, p_count_sql text, p_owner uuid)
RETURNS integer
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  n integer;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended(p_lock_key, 0));
  EXECUTE p_count_sql INTO n USING p_owner;
  RETURN n;
END
$$;
