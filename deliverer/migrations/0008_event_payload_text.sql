-- The payload is kept as the text it is delivered as (schema.ts): JSON with the contract's key order, no spaces,
-- exactly what deliverer/payload.ts renderPayload makes of it. The stored jsonb is rewritten into that text here:
-- the envelope's keys in the order id, kind, date, subscriptionId, data; a transfer's data (it has a txId) and its
-- asset in theirs (payload.ts); every other key after those, in jsonb's own order, which is the order in which
-- renderPayload saw them (it read the jsonb's text), except that a JavaScript object lists integer-like keys first, in
-- numeric order, and so does this. Numbers print as jsonb prints them, which is JSON.stringify's text for the
-- integers and short decimals a payload carries. test/integration/deliverer.migration.test.ts holds the two equal.
CREATE FUNCTION deliverer_json_text(v jsonb, key_order text[] DEFAULT '{}', put_key text DEFAULT NULL, put_text text DEFAULT NULL)
RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
  IF jsonb_typeof(v) = 'object' THEN
    RETURN '{' || coalesce((
      SELECT string_agg(to_json(x.k)::text || ':' || CASE WHEN x.k = put_key THEN put_text ELSE deliverer_json_text(x.val) END, ','
        ORDER BY x.k !~ '^(0|[1-9][0-9]{0,9})$' OR x.k::bigint >= 4294967295,
          CASE WHEN x.k ~ '^(0|[1-9][0-9]{0,9})$' AND x.k::bigint < 4294967295 THEN x.k::bigint END,
          coalesce(array_position(key_order, x.k), 2147483647), x.n)
      FROM (SELECT e.key AS k, e.value AS val, e.n FROM jsonb_each(v) WITH ORDINALITY AS e(key, value, n)
            UNION ALL SELECT put_key, NULL, 0 WHERE put_key IS NOT NULL AND NOT v ? put_key) x), '') || '}';
  ELSIF jsonb_typeof(v) = 'array' THEN
    RETURN '[' || coalesce((SELECT string_agg(deliverer_json_text(a.x), ',' ORDER BY a.n) FROM jsonb_array_elements(v) WITH ORDINALITY AS a(x, n)), '') || ']';
  END IF;
  RETURN v::text;
END $$;--> statement-breakpoint
CREATE FUNCTION deliverer_payload_text(p jsonb) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  data jsonb := coalesce(nullif(p->'data', 'null'::jsonb), '{}'::jsonb);
  shaped text;
BEGIN
  IF data ? 'txId' THEN
    shaped := CASE WHEN jsonb_typeof(data->'asset') = 'object'
      THEN deliverer_json_text(data, ARRAY['chainId', 'blockNumber', 'blockHash', 'blockTimestamp', 'txId', 'logIndex',
          'internalIndex', 'from', 'to', 'amount', 'asset', 'fee', 'memo', 'reason', 'solidifiedBlockNumber',
          'matchedAddresses', 'test'], 'asset',
        deliverer_json_text(data->'asset', ARRAY['type', 'standard', 'contract', 'tokenId', 'symbol', 'decimals']))
      ELSE deliverer_json_text(data, ARRAY['chainId', 'blockNumber', 'blockHash', 'blockTimestamp', 'txId', 'logIndex',
          'internalIndex', 'from', 'to', 'amount', 'asset', 'fee', 'memo', 'reason', 'solidifiedBlockNumber',
          'matchedAddresses', 'test']) END;
  ELSE
    shaped := deliverer_json_text(data);
  END IF;
  RETURN deliverer_json_text(p, ARRAY['id', 'kind', 'date', 'subscriptionId', 'data'], 'data', shaped);
END $$;--> statement-breakpoint
ALTER TABLE "events" ALTER COLUMN "payload" SET DATA TYPE text USING deliverer_payload_text("payload");--> statement-breakpoint
ALTER TABLE "events" ADD CONSTRAINT "events_payload_object" CHECK (json_typeof("payload"::json) = 'object');--> statement-breakpoint
DROP FUNCTION deliverer_payload_text(jsonb);--> statement-breakpoint
DROP FUNCTION deliverer_json_text(jsonb, text[], text, text);
