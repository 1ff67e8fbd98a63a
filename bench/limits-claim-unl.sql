-- coord.claim of 1 job from queue lu (no limit), then coord.complete
SELECT id, token FROM coord.claim('lu') \gset
SELECT coord.complete(:id::bigint, :token::bigint);
