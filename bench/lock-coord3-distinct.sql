-- coord.lock + coord.unlock, 3-level path per client under shared ancestors:
-- IX on /bench and /bench/l3 (taken by every client), X on /bench/l3/<client>
SELECT coord.lock('/bench/l3/' || :client_id);
SELECT coord.unlock('/bench/l3/' || :client_id);
