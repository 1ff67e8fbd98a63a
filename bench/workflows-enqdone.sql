-- issue 27: coord.enqueue with after of one finished parent (-D pdone)
SELECT coord.enqueue('we', '{"x":1}', after => ARRAY[:pdone::bigint]);
