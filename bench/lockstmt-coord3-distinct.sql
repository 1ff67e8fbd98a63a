-- one statement per pair, 3-level coord path
SELECT coord.lock('/bench/l3/' || :client_id), coord.unlock('/bench/l3/' || :client_id);
