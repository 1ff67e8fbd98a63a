-- a write guarded by coord.fence_ok under this client's path (/bfence0 ... /bfence3) and token: one autocommit INSERT
INSERT INTO bench_fence_log (k) SELECT t.k FROM bench_fence_tok AS t
 WHERE t.k = :client_id AND coord.fence_ok(t.path, t.token);
