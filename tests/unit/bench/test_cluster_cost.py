"""`bench.bench_cluster_cost`: latency quantiles over several processes' histograms."""

from __future__ import annotations

from bench.bench_cluster_cost import LATENCY, quantiles


def scrape(counts: dict[str, int]) -> str:
    return "\n".join(f'{LATENCY}_bucket{{le="{le}"}} {n}' for le, n in counts.items())


def test_quantiles_are_taken_over_the_summed_buckets_of_all_processes_since_a_scrape() -> None:
    before = [scrape({"0.1": 5, "1.0": 5, "+Inf": 5}), scrape({"0.1": 0, "1.0": 0, "+Inf": 0})]
    # since `before`: process 1 decided 10 documents under 0.1 s, process 2 90 between 0.1 and 1 s
    after = [scrape({"0.1": 15, "1.0": 15, "+Inf": 15}), scrape({"0.1": 0, "1.0": 90, "+Inf": 90})]
    p50, p99 = quantiles(after, before)
    assert p50 is not None and p99 is not None
    assert 0.1 < p50 < p99 <= 1.0
    assert abs(p50 - (0.1 + 0.9 * 40 / 90)) < 1e-3  # rank 50 is the 40th of the 90 in (0.1, 1]
