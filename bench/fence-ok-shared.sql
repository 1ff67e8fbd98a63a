-- a write guarded by coord.fence_ok, every client under one path's token (/bfence-shared: a holder's connection pool)
INSERT INTO bench_fence_log (k) SELECT t.k FROM bench_fence_tok AS t
 WHERE t.k = -1 AND coord.fence_ok(t.path, t.token);
