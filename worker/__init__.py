"""The Kafka worker: a thin I/O shell around `neardup_stream.Deduplicator`."""
