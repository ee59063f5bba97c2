-- API keys are stored only as a SHA-256 hash of the key, with the name that the audit
-- log shows as the actor. Rows are never deleted: a revoked key keeps its name taken,
-- so that an actor in the audit log always names exactly one key.
CREATE TABLE api_keys (
  name       TEXT PRIMARY KEY,
  hash       TEXT NOT NULL UNIQUE,
  created_at TEXT NOT NULL,
  created_by TEXT NOT NULL,
  revoked_at TEXT,
  revoked_by TEXT
);
