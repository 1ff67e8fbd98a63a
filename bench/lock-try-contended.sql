-- coord.try_lock + coord.unlock, one contended 1-level path: unlock only if it was taken
SELECT coord.try_lock('/bench-contended')::int AS got \gset
\if :got = 1
SELECT coord.unlock('/bench-contended');
\endif
