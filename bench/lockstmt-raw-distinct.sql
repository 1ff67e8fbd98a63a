-- one statement (1 round trip, 1 transaction) per pair: isolates server-side cost
SELECT pg_advisory_lock(:client_id), pg_advisory_unlock(:client_id);
