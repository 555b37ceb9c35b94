"""Scale-out: replicas that together act as one deduplicator over a sharded index.

Three roles run in every replica, each a consumer-group member with its own transactional
producer (see docs/design/scale-out.md for the design and what it leaves for later):

- `edge` (group `<group>-edge`, over the input): parses, dead-letters bad input, and appends
  one fingerprint-log record per batch and log partition (`envelope`) to the fingerprints
  topic, partitioned by domain, and its documents' keys and values to the same partition
  of the payloads topic (`payloads`). The log order is the decision order.
- `shard` (group `<group>-shards`, over the shards topic: owning partition s = owning shard
  s): replays the fingerprint log, votes with `ShardVoter`, and commits its votes together
  with its log position (offset metadata of partition s).
- `gather` (group `<group>-gather`, over the votes topic): joins the S votes of each log
  record and its payloads (the only role that reads them), decides with `Gatherer`,
  publishes decisions and pass-throughs.

A role that gains a shard or log partition rebuilds its state from the start of the log
(retention bounds it) and publishes only past its committed checkpoint, so a decision is a
function of the log alone: one replica or many decide identically.
"""
