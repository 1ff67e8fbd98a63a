-- coord.claim of 100 jobs, then coord.complete_many(ids, tokens): two transactions per 100 jobs
SELECT COALESCE(array_agg(id)::text, '{}') AS ids, COALESCE(array_agg(token)::text, '{}') AS tokens FROM coord.claim('q', 100) \gset
SELECT coord.complete_many(:ids::bigint[], :tokens::bigint[]);
