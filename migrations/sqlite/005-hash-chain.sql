-- A tamper-evident hash chain over the event log (src/store/hash-chain.ts has the
-- encoding): every event carries the previous event's hash and its own. Existing
-- events are chained here, in seq order; event_hash() is registered by the migration
-- runner. The append-only trigger is lifted for this one UPDATE, inside the
-- migration's transaction, and put back as it was.
ALTER TABLE events ADD COLUMN prev_hash TEXT;
ALTER TABLE events ADD COLUMN hash TEXT;

DROP TRIGGER events_no_update;

WITH RECURSIVE chain(seq, prev_hash, hash) AS (
  SELECT e.seq, printf('%.64c', '0'),
         event_hash(printf('%.64c', '0'), e.seq, e.pet_id, e.version, e.type, e.data, e.actor, e.request_id, e.recorded_at)
  FROM events e
  WHERE e.seq = (SELECT min(seq) FROM events)
  UNION ALL
  SELECT e.seq, c.hash,
         event_hash(c.hash, e.seq, e.pet_id, e.version, e.type, e.data, e.actor, e.request_id, e.recorded_at)
  FROM chain c
  JOIN events e ON e.seq = (SELECT min(seq) FROM events WHERE seq > c.seq)
)
UPDATE events SET prev_hash = chain.prev_hash, hash = chain.hash
FROM chain WHERE chain.seq = events.seq;

CREATE TRIGGER events_no_update BEFORE UPDATE ON events
BEGIN
  SELECT RAISE(ABORT, 'events is append-only: UPDATE is not allowed');
END;

-- Every new event must be chained.
CREATE TRIGGER events_chained BEFORE INSERT ON events
WHEN NEW.prev_hash IS NULL OR NEW.hash IS NULL
BEGIN
  SELECT RAISE(ABORT, 'events need prev_hash and hash (the hash chain)');
END;
