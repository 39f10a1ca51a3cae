SELECT event_id AS id, next_attempt_at FROM event_deliveries
WHERE status = 'pending' AND NOT held
  AND next_attempt_at >= $1::timestamptz AND next_attempt_at < $2::timestamptz
  AND (next_attempt_at > $1::timestamptz OR event_id > $3)
ORDER BY next_attempt_at, event_id LIMIT $4
