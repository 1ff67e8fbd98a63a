-- raw baseline, one contended key: 2 statements per pair
SELECT pg_advisory_lock(7201);
SELECT pg_advisory_unlock(7201);
