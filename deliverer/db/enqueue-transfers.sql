WITH v AS (
  SELECT * FROM json_to_recordset($1::text::json)
    AS v(id text, sub text, key text, addrs json, kind text, chain text, tx text, li int, ii int, payload text,
         next timestamptz, held boolean, hr text, at timestamptz)
), k AS (
  INSERT INTO event_transfer_keys (subscription_id, kind, chain_id, tx_id, log_index, internal_index, event_id, event_created_at)
  SELECT v.sub, v.kind, v.chain, v.tx, v.li, v.ii, v.id, v.at FROM v
  ON CONFLICT DO NOTHING
  RETURNING event_id
), e AS (
  INSERT INTO events (id, subscription_id, key_id, addresses, kind, chain_id, tx_id, log_index, internal_index, payload, created_at)
  SELECT v.id, v.sub, v.key, ARRAY(SELECT json_array_elements_text(v.addrs)), v.kind, v.chain, v.tx, v.li, v.ii, v.payload, v.at
  FROM v JOIN k ON k.event_id = v.id
  RETURNING id
), d AS (
  INSERT INTO event_deliveries (event_id, created_at, subscription_id, key_id, status, next_attempt_at, held, held_reason, updated_at)
  SELECT v.id, v.at, v.sub, v.key, 'pending', v.next, v.held, v.hr, v.at FROM v JOIN k ON k.event_id = v.id
), a AS (
  INSERT INTO event_addresses (key_id, address, created_at, event_id)
  SELECT v.key, x, v.at, v.id FROM v JOIN k ON k.event_id = v.id, json_array_elements_text(v.addrs) x
  WHERE v.key IS NOT NULL
), t AS (
  INSERT INTO event_tx_refs (key_id, tx_id, created_at, event_id)
  SELECT v.key, v.tx, v.at, v.id FROM v JOIN k ON k.event_id = v.id WHERE v.key IS NOT NULL
)
SELECT id FROM e
