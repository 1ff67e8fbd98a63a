-- coord.enqueue of one job per transaction (queue 'e', no claimer: no NOTIFY)
SELECT coord.enqueue('e', '{"x":1}'::jsonb);
