"""The role runtime shared by the single worker and the cluster roles (`docs/design/runtime.md`).

So far it owns the failure policy (`policy`): how a failed batch shrinks the next one, how
long to back off, and which input a broker rejection blames.
"""
