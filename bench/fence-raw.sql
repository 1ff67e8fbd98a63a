-- a write under this client's path and token, unchecked (the baseline): one autocommit INSERT
INSERT INTO bench_fence_log (k) SELECT t.k FROM bench_fence_tok AS t WHERE t.k = :client_id;
