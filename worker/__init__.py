"""The Kafka worker: the I/O shell around the pure core (`neardup_stream`).

`main` is the entry point (`neardup-stream worker`): settings, logging, metrics, signals.
Two topologies share its parts (`docs/design/runtime.md`): the single worker (`loop.Worker`,
one index per input partition, so it compares within partitions only and says so when it
holds several (`scope`); `decide` as its pure step) and, with `--cluster`, a replica running
the edge, shard and gather roles over a sharded index (`worker.cluster`). Both use the same
settings (`settings`), topics (`topics`), clients (`clients`), codecs (`codec`), admission of
inputs (`admission`), failure policy and assignment following (`runtime`), claims of their
topics for their pipeline (`claims`) and metrics (`metrics`). Still separate per topology: transactions (`transaction` vs `cluster.txn`) and
restores (`restore`, `indexes` vs `cluster.replay`, `cluster.restores`).
"""
