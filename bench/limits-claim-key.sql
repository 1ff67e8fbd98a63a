-- coord.claim of 1 job from queue lk (a per-key concurrency limit over 100 keys), then coord.complete
SELECT id, token FROM coord.claim('lk') \gset
SELECT coord.complete(:id::bigint, :token::bigint);
