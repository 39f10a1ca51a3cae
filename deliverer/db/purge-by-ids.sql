SELECT id, created_at, key_id, addresses, tx_id FROM events
WHERE id = ANY (ARRAY(SELECT json_array_elements_text($1::text::json)))
  AND created_at BETWEEN $2::timestamptz AND $3::timestamptz
