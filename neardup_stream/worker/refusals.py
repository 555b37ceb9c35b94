"""Settings the broker refuses, as configuration errors.

Some settings are checked only by the broker, on the request that uses them: a transaction
timeout above its `transaction.max.timeout.ms` is refused by InitProducerId (kafka-python
reports it as a generic `KafkaError("Unexpected error in InitProducerIdResponse: [Error 50]
InvalidTransactionTimeoutError")`), a session timeout outside its
`group.min.session.timeout.ms`..`group.max.session.timeout.ms` by JoinGroup. Retrying
cannot change the broker's limits: before, the worker crashed with a traceback (a replica:
one per role). `refusal_in` finds such a refusal in an exception, `refused` words it with
the setting, its value and the broker setting that bounds it; `retry` does not retry one,
and the worker exits with it, `EX_CONFIG`, as for an ACL (`neardup_stream.worker.authorization`).
"""

from __future__ import annotations

from kafka.errors import InvalidSessionTimeoutError, InvalidTransactionTimeoutError, KafkaError

from neardup_stream.worker.authorization import denial_in
from neardup_stream.worker.security_errors import raised_from
from neardup_stream.worker.settings import Settings

REFUSALS: tuple[type[KafkaError], ...] = (
    InvalidTransactionTimeoutError,
    InvalidSessionTimeoutError,
)


class SettingRefused(RuntimeError):
    """The broker refuses a setting of this worker: a configuration error."""


def refusal_in(exc: BaseException | None) -> type[KafkaError] | None:
    """The kind of refusal in `exc` or the exceptions it was raised from, if any."""
    for e in raised_from(exc):
        for kind in REFUSALS:
            # kafka-python may keep the broker's error only in a generic KafkaError's message
            if isinstance(e, kind) or (isinstance(e, KafkaError) and kind.__name__ in str(e)):
                return kind
    return None


def retrying_cannot_fix(exc: BaseException) -> bool:
    """Whether `exc` holds an ACL denial (`authorization`) or a setting the broker refuses:
    configuration errors, raised past every retry and said once by `main`."""
    return denial_in(exc) is not None or refusal_in(exc) is not None


def refused(exc: BaseException | None, settings: Settings) -> SettingRefused | None:
    """The failure to stop with if `exc` holds the broker refusing one of `settings`."""
    kind = refusal_in(exc)
    if kind is None:
        return None
    w = settings.worker
    if kind is InvalidTransactionTimeoutError:
        setting, value = "worker.transaction_timeout_ms", w.transaction_timeout_ms
        why = "it is above the broker's transaction.max.timeout.ms (900000 unless set)"
    else:
        setting, value = "worker.session_timeout_ms", w.session_timeout_ms
        why = (
            "it is outside the broker's group.min.session.timeout.ms .. "
            "group.max.session.timeout.ms (6000 .. 1800000 unless set)"
        )
    variable = "NEARDUP_" + setting.upper().replace(".", "__")
    return SettingRefused(
        f"the Kafka broker at {settings.kafka.bootstrap_servers} refuses {setting} = {value} "
        f"({variable}): {why}; change it, or the broker's limit"
    )
