-- raw try baseline, distinct keys: try, and unlock only if it was taken
SELECT pg_try_advisory_lock(:client_id)::int AS got \gset
\if :got = 1
SELECT pg_advisory_unlock(:client_id);
\endif
