"""Benchmark suite for neardup-stream: evaluation corpus, exact ground truth, peers, runner."""
