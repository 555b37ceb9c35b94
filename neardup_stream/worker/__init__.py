"""The Kafka worker: the I/O shell around the pure core (`neardup_stream`).

`main` is the entry point (`neardup-stream worker`): settings, logging, metrics, signals.
Two topologies share its parts (`docs/design/runtime.md`): the single worker (`loop.Worker`
running `batch.BatchRole`, one index per input partition, so it compares within partitions only and says so when it
holds several (`scope`); `decide` as its pure step) and, with `--cluster`, a replica running
the edge, shard and gather roles over a sharded index (`neardup_stream.worker.cluster`). Both use the same
settings (`settings`), topics (`topics`), clients (`clients`), codecs (`codec`), admission of
inputs (`admission`), claims of their topics and group for their pipeline (`claims`, its
records and rule in `claim_records`), metrics
(`metrics`) and the runtime (`runtime`): the failure policy, assignment following, one
publisher, one background restore and its changelog reader. Both run on the runtime's role
loop (`runtime.runner`): the cluster roles synchronously, the single worker in flight.
"""
