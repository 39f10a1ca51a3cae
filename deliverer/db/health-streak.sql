SELECT count(*)::int AS n FROM (
  SELECT 1 FROM delivery_attempts WHERE subscription_id = $1 AND NOT ok
    AND attempted_at > $2::timestamptz LIMIT 100000) f
