-- coord.lock + coord.unlock, 1-level path per client (/bench0 ... /bench3): 2 statements per pair
SELECT coord.lock('/bench' || :client_id);
SELECT coord.unlock('/bench' || :client_id);
