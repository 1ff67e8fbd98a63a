-- cardinality(coord.owned(g)): the sync of parts-owned1.sql, with only the
-- count sent back (the array of 1024 integers is most of that call's cost)
\if :joined = 0
SELECT 1 AS joined FROM coord.join('bp' || :client_id, 'm') \gset
\endif
SELECT cardinality(coord.owned('bp' || :client_id));
