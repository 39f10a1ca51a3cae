SELECT e.event_id AS id, e.subscription_id, e.kind, e.chain_id, e.tx_id, e.log_index, e.internal_index FROM event_transfer_keys e
JOIN json_to_recordset($1::text::json) AS v(sub text, kind text, chain text, tx text, li int, ii int)
  ON e.subscription_id = v.sub AND e.kind = v.kind AND e.chain_id = v.chain AND e.tx_id = v.tx
    AND e.log_index = v.li AND e.internal_index = v.ii
