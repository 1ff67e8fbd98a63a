-- coord.try_lock + coord.unlock, 1-level path per client: unlock only if it was taken
SELECT coord.try_lock('/bench' || :client_id)::int AS got \gset
\if :got = 1
SELECT coord.unlock('/bench' || :client_id);
\endif
