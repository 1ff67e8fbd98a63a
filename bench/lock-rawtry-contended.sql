-- raw try baseline, one contended key: try, and unlock only if it was taken
SELECT pg_try_advisory_lock(7201)::int AS got \gset
\if :got = 1
SELECT pg_advisory_unlock(7201);
\endif
