-- coord.lock + coord.unlock, one contended 3-level path: 2 statements per pair
SELECT coord.lock('/bench/l3/contended');
SELECT coord.unlock('/bench/l3/contended');
