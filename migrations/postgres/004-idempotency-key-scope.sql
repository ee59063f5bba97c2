-- Safe retries: an Idempotency-Key is scoped to the API key that sent it, no longer to the
-- path too. The path stays in the record (and in its fingerprint), so the same key on
-- another pet is refused (422) instead of written again. Of the records that now share a
-- key, the newest stays: the one a retry of that key most likely repeats.
DELETE FROM idempotency_keys AS k USING (
  SELECT ctid, row_number() OVER (PARTITION BY api_key, idempotency_key ORDER BY created_at DESC, path DESC) AS n
  FROM idempotency_keys
) AS ranked
WHERE k.ctid = ranked.ctid AND ranked.n > 1;
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_pkey;
ALTER TABLE idempotency_keys ADD PRIMARY KEY (api_key, idempotency_key);
