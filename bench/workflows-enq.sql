-- issue 27: a plain coord.enqueue (the baseline of workflows-enqafter.sql)
SELECT coord.enqueue('we', '{"x":1}');
