-- coord.request + coord.mark_queued + coord.mark_done on a random key: three
-- statements, three autocommit transactions; the cycle goes on only when the
-- request was granted (completed cycles are counted in coord.request_keys)
\set k random(1, 1000000000)
SELECT coord.request('k' || :k, wait => false)::int AS got \gset
\if :got = 1
SELECT coord.mark_queued('k' || :k);
SELECT coord.mark_done('k' || :k);
\endif
