WITH v AS (
  SELECT * FROM unnest($1::text[], $2::int[], $3::text[], $4::int[], $5::int[], $6::int[], $7::text[],
                       $8::timestamptz[], $9::text[], $10::timestamptz[], $11::int[], $12::text[], $13::text[], $16::int[])
    AS v(id, prev, status, attempts, inc, rs, rb, next, aid, aat, dur, err, arb, cycle)
), upd AS (
  UPDATE event_deliveries AS d SET
    status = v.status,
    attempts = v.attempts,
    delivery_count = d.delivery_count + v.inc,
    response_status = v.rs,
    response_body = v.rb,
    next_attempt_at = v.next,
    held = false,
    updated_at = now()
  FROM v
  WHERE d.event_id = v.id AND d.event_id = ANY ($1::text[])
    AND d.status = 'pending' AND d.attempts = v.prev AND d.cycle = v.cycle AND d.created_at BETWEEN $14::timestamptz AND $15::timestamptz
  RETURNING d.event_id AS id, d.subscription_id, d.trigger, d.created_at
), ins AS (
  INSERT INTO delivery_attempts (id, event_id, event_created_at, subscription_id, attempted_at, duration_ms, ok, response_status, response_body, error, trigger)
  SELECT v.aid, upd.id, upd.created_at, upd.subscription_id, v.aat, v.dur, v.inc = 1, v.rs, v.arb, v.err, upd.trigger
  FROM upd JOIN v ON v.id = upd.id
)
SELECT id FROM upd
