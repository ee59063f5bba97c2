-- Scratch space for the service's readiness probe: after a storage fault (a full disk,
-- a read-only file), /readyz checks whether writing works again by writing here (a row
-- needing new pages, deleted in the same transaction). It never holds data.
CREATE TABLE service_health (
  id      INTEGER PRIMARY KEY,
  padding BLOB
);
