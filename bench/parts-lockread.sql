-- the baseline "lock-table read": one round trip whose server work is one
-- lookup of a key in the lock manager (taken and let go at once)
SELECT pg_try_advisory_lock(7300 + :client_id) AND pg_advisory_unlock(7300 + :client_id);
