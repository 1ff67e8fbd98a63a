-- coord.acquire_permit + coord.release_permit, 3 permits, one semaphore per client (/bsem0 ... /bsem3): 2 statements per pair
SELECT coord.acquire_permit('/bsem' || :client_id, 3);
SELECT coord.release_permit('/bsem' || :client_id);
