-- Safe retries: an Idempotency-Key is scoped to the API key that sent it, no longer to the
-- path too. The path stays in the record (and in its fingerprint), so the same key on
-- another pet is refused (422) instead of written again. Of the records that now share a
-- key, the newest stays: the one a retry of that key most likely repeats.
CREATE TABLE idempotency_keys_by_api_key (
  api_key         TEXT    NOT NULL,
  path            TEXT    NOT NULL,
  idempotency_key TEXT    NOT NULL,
  fingerprint     TEXT    NOT NULL,
  status          INTEGER NOT NULL CHECK (status IN (200, 404, 412)),
  etag            TEXT,
  body            TEXT    NOT NULL,
  created_at      TEXT    NOT NULL,
  expires_at      TEXT    NOT NULL,
  PRIMARY KEY (api_key, idempotency_key)
) WITHOUT ROWID;
INSERT INTO idempotency_keys_by_api_key
  SELECT api_key, path, idempotency_key, fingerprint, status, etag, body, created_at, expires_at
  FROM (SELECT *, row_number() OVER (PARTITION BY api_key, idempotency_key ORDER BY created_at DESC, path DESC) AS n
        FROM idempotency_keys)
  WHERE n = 1;
DROP TABLE idempotency_keys;
ALTER TABLE idempotency_keys_by_api_key RENAME TO idempotency_keys;
CREATE INDEX idempotency_keys_by_expiry ON idempotency_keys (expires_at);
