-- coord.owned with no membership change: every client a member of one group
-- bp4 (so each call probes the other members' locks)
\if :joined = 0
SELECT 1 AS joined FROM coord.join('bp4', 'm' || :client_id) \gset
\endif
SELECT coord.owned('bp4');
