-- a plain coord.claim of 1 job, then coord.complete (two transactions)
SELECT id, token FROM coord.claim('bq') \gset
SELECT coord.complete(:id::bigint, :token::bigint);
