-- A key's scope is part of the key log, as on SQLite (migrations/sqlite/011-key-scope.sql):
-- a KeyCreated event's data says what the key may do ('{"scope":"read-only"}'; empty for
-- a key that may read and write). data is a field of the key chain's hash when it is not
-- empty (src/store/hash-chain.ts).
ALTER TABLE api_key_events ADD COLUMN data text NOT NULL DEFAULT '';
