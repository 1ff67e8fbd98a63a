-- coord.enqueue_many: 100 jobs per call and transaction
SELECT count(*) FROM coord.enqueue_many('e', array_fill('{"x":1}'::jsonb, ARRAY[100]));
