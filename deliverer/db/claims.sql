SELECT e.id, e.subscription_id, d.status, d.attempts, d.cycle, d.held, d.next_attempt_at, e.payload
FROM events e CROSS JOIN LATERAL (
  SELECT status, attempts, cycle, held, next_attempt_at FROM event_deliveries
  WHERE event_id = e.id AND created_at = e.created_at AND created_at BETWEEN $2::timestamptz AND $3::timestamptz
  LIMIT 1) d
WHERE e.id = ANY (ARRAY(SELECT json_array_elements_text($1::text::json)))
  AND e.created_at BETWEEN $2::timestamptz AND $3::timestamptz
