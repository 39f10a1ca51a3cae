SELECT event_id AS id, next_attempt_at FROM event_deliveries
WHERE status = 'pending' AND NOT held AND event_id > $1
ORDER BY event_id LIMIT $2
