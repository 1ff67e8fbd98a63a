-- raw baseline, distinct keys: one session lock + unlock, 2 statements (2 round trips, 2 autocommit transactions)
SELECT pg_advisory_lock(:client_id);
SELECT pg_advisory_unlock(:client_id);
