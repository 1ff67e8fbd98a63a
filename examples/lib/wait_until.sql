-- Shared by the examples' schema files: \set schema sN, then \ir this file.
-- For the demos and the tests: waits until a boolean SQL expression is true,
-- re-evaluating it every millisecond; false after `timeout`.
CREATE FUNCTION :"schema".wait_until(condition text, timeout interval)
RETURNS boolean LANGUAGE plpgsql VOLATILE STRICT
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    deadline timestamptz := clock_timestamp() + timeout;
    ok boolean;
BEGIN
    LOOP
        EXECUTE 'SELECT (' || condition || ')::boolean' INTO ok;
        IF ok THEN RETURN true; END IF;
        IF clock_timestamp() > deadline THEN RETURN false; END IF;
        PERFORM pg_sleep(0.001);
        PERFORM pg_stat_clear_snapshot();   -- pg_stat_activity is cached per transaction
    END LOOP;
END $$;
COMMENT ON FUNCTION :"schema".wait_until(text, interval) IS
  'For the demo: polls a boolean SQL expression every millisecond until it is true (or false after timeout)';
