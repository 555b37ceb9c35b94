"""The role runtime shared by the single worker and the cluster roles (`docs/design/runtime.md`).

It owns the failure policy (`policy`: how a failed batch shrinks the next one, how long to
back off, which input a broker rejection blames), how the single worker, the shard and the
gather follow their assignments (`following`: what to release, cancel and restore), the one
changelog reader (`replay`), background restores per partition, paused until complete
(`restore`), the one publisher of all four loops (`publisher`: messages and offsets with
metadata in one transaction, one deadline), the loop the cluster roles run on (`runner`:
`RoleRunner` and the `Role` interface) and each role's own group (`role`), and a stop
bounded by a deadline (`shutdown`, used by the cluster replica).
"""
