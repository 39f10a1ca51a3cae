SELECT count(*)::int AS n FROM event_deliveries WHERE subscription_id = $1 AND status = 'pending'
