"""Settings the broker refuses, as configuration errors.

Some settings are checked only by the broker, on the request that uses them: a transaction
timeout above the broker's `transaction.max.timeout.ms` is refused by InitProducerId, which
kafka-python reports as a generic `KafkaError("Unexpected error in InitProducerIdResponse:
[Error 50] InvalidTransactionTimeoutError")`. Retrying cannot change the broker's limit:
before, the worker crashed at start-up with a traceback. `refused` names the setting, its
value and the broker setting that bounds it; the worker exits with it, `EX_CONFIG`, as for
an ACL (`worker.authorization`) or wrong credentials (`worker.security_errors`).
"""

from __future__ import annotations

from kafka.errors import InvalidTransactionTimeoutError

from worker.settings import Settings


class SettingRefused(RuntimeError):
    """The broker refuses a setting of this worker: a configuration error."""


def refused(exc: BaseException | None, settings: Settings) -> SettingRefused | None:
    """The failure to stop with if `exc` (or what it was raised from) is the broker refusing
    one of `settings`, worded with the setting and how to fix it."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, SettingRefused):
            return exc
        # kafka-python keeps the broker's error only in the message of a generic KafkaError
        if isinstance(exc, InvalidTransactionTimeoutError) or (
            InvalidTransactionTimeoutError.__name__ in str(exc)
        ):
            value = settings.worker.transaction_timeout_ms
            return SettingRefused(
                f"the Kafka broker at {settings.kafka.bootstrap_servers} refuses "
                f"worker.transaction_timeout_ms = {value} "
                "(NEARDUP_WORKER__TRANSACTION_TIMEOUT_MS): it is above the broker's "
                "transaction.max.timeout.ms (900000 unless the broker sets another); "
                "lower it, or raise the broker's limit"
            )
        exc = exc.__cause__ or exc.__context__
    return None
