SELECT id, created_at, key_id, addresses, tx_id FROM events WHERE subscription_id = $1
ORDER BY created_at DESC, id DESC LIMIT $2
