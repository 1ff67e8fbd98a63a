-- one commit per job: coord.complete_and_claim finishes the job in hand and
-- claims the next one in one statement (a client's first run claims only;
-- pgbench -D id=0 starts every client with nothing in hand)
\if :id = 0
SELECT id, token FROM coord.claim('q') \gset
\else
SELECT id, token FROM coord.complete_and_claim(:id::bigint, :token::bigint) \gset
\endif
