-- coord.claim of 1 job, then coord.complete: two transactions per job
SELECT id, token FROM coord.claim('q') \gset
SELECT coord.complete(:id::bigint, :token::bigint);
