"""The Kafka worker: the I/O shell around the pure core (`neardup_stream`).

Two topologies share its parts (`docs/design/runtime.md`): the single worker (`loop.Worker`,
one index per input partition, `decide` as its pure step) and, with `--cluster`, a replica
running the edge, shard and gather roles over a sharded index (`worker.cluster`). Both use the
same settings (`settings`), topics (`topics`), clients (`clients`), codecs (`codec`),
admission of inputs (`admission`), failure policy (`runtime.policy`) and metrics (`metrics`).
"""
