-- coord.lock + coord.unlock, one contended 1-level path: 2 statements per pair
SELECT coord.lock('/bench-contended');
SELECT coord.unlock('/bench-contended');
