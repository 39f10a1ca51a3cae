SELECT
  count(*) FILTER (WHERE attempted_at >= $2::timestamptz)::int AS hour_attempts,
  count(*) FILTER (WHERE attempted_at >= $2::timestamptz AND ok)::int AS hour_ok,
  count(*)::int AS day_attempts,
  count(*) FILTER (WHERE ok)::int AS day_ok,
  percentile_cont(0.5) WITHIN GROUP (ORDER BY duration_ms) AS p50,
  percentile_cont(0.99) WITHIN GROUP (ORDER BY duration_ms) AS p99,
  coalesce(json_agg(json_build_array(floor(extract(epoch FROM (attempted_at - $3::timestamptz)) / 3600)::int, ok)), '[]') AS marks
FROM delivery_attempts WHERE subscription_id = $1 AND attempted_at >= $3::timestamptz
