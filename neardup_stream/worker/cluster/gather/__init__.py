"""The gather role, in layers: `role` (the Kafka-facing role the runner runs), `reading` (its
consumers: votes, the fingerprint log, payloads), `following` (the log partitions it holds,
restored from its changelog), and the Kafka-free halves: `state` (one log partition's joins
and decide step) and `deciding` (which joined records a batch decides, what it commits)."""
