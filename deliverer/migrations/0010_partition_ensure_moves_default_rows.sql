-- deliverer_ensure_partition (0004) made a day's partition with CREATE TABLE … PARTITION OF, which fails for good once
-- the default partition holds a row of that day (a day written before its partition was made, after an outage longer
-- than the days made ahead): every later maintenance pass failed on it. It also took an exclusive lock on the parent,
-- queueing every read and write of the events behind any long read. Now the day's table is made apart, the default
-- partition's rows of that day are moved into it, and it is attached: ATTACH takes only SHARE UPDATE EXCLUSIVE on the
-- parent (readers and writers go on) and an exclusive lock on the default partition, which the move needs anyway.
-- The caller bounds the waits with lock_timeout (deliverer/partitions.ts).
CREATE OR REPLACE FUNCTION deliverer_ensure_partition(parent text, day date) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
  part text := parent || '_p' || to_char(day, 'YYYYMMDD');
  lo text := day::text || ' 00:00:00+00';
  hi text := (day + 1)::text || ' 00:00:00+00';
  def regclass;
  keycol text;
  cols text;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('deliverer_partitions'));
  IF to_regclass(part) IS NOT NULL THEN
    RETURN false;
  END IF;
  SELECT nullif(pt.partdefid, 0)::regclass, a.attname INTO def, keycol
  FROM pg_partitioned_table pt JOIN pg_attribute a ON a.attrelid = pt.partrelid AND a.attnum = pt.partattrs[0]
  WHERE pt.partrelid = parent::regclass;
  EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', part, parent);
  IF def IS NOT NULL THEN
    EXECUTE format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE', def);
    SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum) INTO cols
    FROM pg_attribute WHERE attrelid = parent::regclass AND attnum > 0 AND NOT attisdropped;
    -- Every column as it is: an event keeps its stream position (xid, seq).
    EXECUTE format('WITH moved AS (DELETE FROM %s WHERE %I >= %L AND %I < %L RETURNING %s) INSERT INTO %I (%s) SELECT %s FROM moved',
      def, keycol, lo, keycol, hi, cols, part, cols, cols);
  END IF;
  EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)', parent, part, lo, hi);
  RETURN true;
END $$;
