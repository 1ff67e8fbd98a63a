-- one statement per pair, 1-level coord path
SELECT coord.lock('/bench' || :client_id), coord.unlock('/bench' || :client_id);
