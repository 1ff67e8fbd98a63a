-- the same with partition_group: each client the one member of its own
-- group, so it owns every segment and claims the same jobs as plain claims
\if :joined = 0
SELECT 1 AS joined FROM coord.join('bq' || :client_id, 'm') \gset
\endif
SELECT id, token FROM coord.claim('bq', partition_group => 'bq' || :client_id) \gset
SELECT coord.complete(:id::bigint, :token::bigint);
