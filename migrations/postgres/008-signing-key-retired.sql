-- Keys an auditor pins, as on SQLite (migrations/sqlite/013-signing-key-retired.sql): a
-- signing key can be retired (SigningKeyRetired: name is the key id, key_hash its raw
-- public key in base64url), and a key added after the log's first carries in its
-- SigningKeyAdded's data the endorsement signed by a key already trusted, or says that it
-- has none.
ALTER TABLE api_key_events DROP CONSTRAINT api_key_events_type_check;
ALTER TABLE api_key_events ADD CONSTRAINT api_key_events_type_check
  CHECK (type IN ('KeyCreated', 'KeyRevoked', 'SigningKeyAdded', 'SigningKeyRetired'));
