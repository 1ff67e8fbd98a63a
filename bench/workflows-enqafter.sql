-- issue 27: coord.enqueue with after of one live parent, a parent per client
-- (-D pbase: the first parent's id; client n waits on pbase + n)
\set p :pbase + :client_id
SELECT coord.enqueue('we', '{"x":1}', after => ARRAY[:p::bigint]);
