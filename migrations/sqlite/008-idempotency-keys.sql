-- Safe retries: the answer of each PATCH sent with an Idempotency-Key, written in the
-- same transaction as its event (or alone, for a 404 or 412), so that a retry gets the
-- same answer and appends nothing. Scoped to the API key (its name) and the path. Not
-- part of the audit trail or the hash chain: records expire (expires_at) and are removed.
CREATE TABLE idempotency_keys (
  api_key         TEXT    NOT NULL,
  path            TEXT    NOT NULL,
  idempotency_key TEXT    NOT NULL,
  fingerprint     TEXT    NOT NULL,
  status          INTEGER NOT NULL CHECK (status IN (200, 404, 412)),
  etag            TEXT,
  body            TEXT    NOT NULL,
  created_at      TEXT    NOT NULL,
  expires_at      TEXT    NOT NULL,
  PRIMARY KEY (api_key, path, idempotency_key)
) WITHOUT ROWID;
CREATE INDEX idempotency_keys_by_expiry ON idempotency_keys (expires_at);
