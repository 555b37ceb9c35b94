"""The role runtime shared by the single worker and the cluster roles (`docs/design/runtime.md`).

So far it owns the failure policy (`policy`: how a failed batch shrinks the next one, how long
to back off, which input a broker rejection blames), how the single worker, the shard and
the gather follow their assignments (`following`: what to release, cancel and restore), and
a stop bounded by a deadline (`shutdown`, used by the cluster replica).
"""
