WITH RECURSIVE s AS (
  (SELECT subscription_id FROM event_deliveries
    WHERE status = 'pending' AND held AND subscription_id > $1 ORDER BY subscription_id LIMIT 1)
  UNION ALL
  SELECT (SELECT d.subscription_id FROM event_deliveries d
    WHERE d.status = 'pending' AND d.held AND d.subscription_id > s.subscription_id ORDER BY d.subscription_id LIMIT 1)
  FROM s WHERE s.subscription_id IS NOT NULL
)
SELECT subscription_id FROM s WHERE subscription_id IS NOT NULL LIMIT $2
