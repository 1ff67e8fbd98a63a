-- as sem-permit-distinct, with coord.permit_since off (set in the acquiring statement): 2 statements per pair
SELECT pg_catalog.set_config('coord.permit_since', 'off', false), coord.acquire_permit('/bsem' || :client_id, 3);
SELECT coord.release_permit('/bsem' || :client_id);
