-- One row per QuantitySet event for auditors: what the stock was before (from the
-- entry's earlier PetTracked/QuantitySet events) and after, and who changed it.
-- A confirmed count (delta 0) is a row too; the initial quantity of a PetTracked is not.
CREATE VIEW stock_adjustments AS
SELECT seq, recorded_at, pet_id, previous_quantity, quantity,
       quantity - previous_quantity AS delta, actor, request_id
FROM (
  SELECT seq, recorded_at, pet_id, type, actor, request_id,
         json_extract(data, '$.quantity') AS quantity,
         lag(json_extract(data, '$.quantity')) OVER (PARTITION BY pet_id ORDER BY version)
           AS previous_quantity
  FROM events
  WHERE type IN ('PetTracked', 'QuantitySet')
)
WHERE type = 'QuantitySet';
