-- A key's scope is part of the key log: a KeyCreated event's data says what the key may
-- do ('{"scope":"read-only"}'; empty for a key that may read and write, as every key made
-- before scopes existed). data is a field of the key chain's hash when it is not empty
-- (src/store/hash-chain.ts), so a scope cannot be changed without breaking the chain.
ALTER TABLE api_key_events ADD COLUMN data TEXT NOT NULL DEFAULT '';
