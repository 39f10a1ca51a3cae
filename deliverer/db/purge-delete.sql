WITH d AS (
  DELETE FROM events WHERE id = ANY (ARRAY(SELECT json_array_elements_text($1::text::json)))
    AND created_at BETWEEN $2::timestamptz AND $3::timestamptz
  RETURNING id
), dd AS (
  DELETE FROM event_deliveries WHERE event_id = ANY (ARRAY(SELECT json_array_elements_text($1::text::json)))
    AND created_at BETWEEN $2::timestamptz AND $3::timestamptz
  RETURNING event_id, status
), da AS (
  DELETE FROM delivery_attempts WHERE event_id = ANY (ARRAY(SELECT json_array_elements_text($1::text::json)))
    AND event_created_at BETWEEN $2::timestamptz AND $3::timestamptz
), dx AS (
  DELETE FROM event_addresses WHERE key_id = ANY (ARRAY(SELECT json_array_elements_text($4::text::json)))
    AND address = ANY (ARRAY(SELECT json_array_elements_text($5::text::json)))
    AND created_at BETWEEN $2::timestamptz AND $3::timestamptz
    AND event_id = ANY (ARRAY(SELECT json_array_elements_text($1::text::json)))
), dt AS (
  DELETE FROM event_tx_refs WHERE key_id = ANY (ARRAY(SELECT json_array_elements_text($4::text::json)))
    AND tx_id = ANY (ARRAY(SELECT json_array_elements_text($6::text::json)))
    AND created_at BETWEEN $2::timestamptz AND $3::timestamptz
    AND event_id = ANY (ARRAY(SELECT json_array_elements_text($1::text::json)))
)
SELECT d.id, dd.status FROM d LEFT JOIN dd ON dd.event_id = d.id
