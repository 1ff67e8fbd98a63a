-- coord.claim of 1 job from queue lr (a per-key rate limit over 100 keys, never empty), then coord.complete
SELECT id, token FROM coord.claim('lr') \gset
SELECT coord.complete(:id::bigint, :token::bigint);
