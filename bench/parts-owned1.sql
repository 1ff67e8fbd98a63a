-- coord.owned with no membership change: each client the one member of its
-- own group (joined at its first script run; pgbench -D joined=0)
\if :joined = 0
SELECT 1 AS joined FROM coord.join('bp' || :client_id, 'm') \gset
\endif
SELECT coord.owned('bp' || :client_id);
