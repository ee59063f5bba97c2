-- The time index carries each event's seq, so that the first event recorded after an
-- instant (where scripts/stock-at --pet stops the replay) and the log in time order (the
-- auditors' gaps in time) are read from the index alone, as SQLite's index on
-- recorded_at, which holds the rowid, already does.
DROP INDEX events_by_time;
CREATE INDEX events_by_time ON events (recorded_at, seq);
