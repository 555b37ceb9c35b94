"""The engine's settings: one frozen object read from the environment, built once in `main()`.

`EngineSettings` holds what the offline CLI and the worker share: the `DedupConfig` and the
`InputMapping`. It reads the environment with prefix `NEARDUP_` and `__` between nested
sections, e.g. `NEARDUP_DEDUP__THRESHOLD=0.85`, `NEARDUP_DEDUP__MAX_AGE_SECONDS=259200`,
`NEARDUP_INPUT__TEXT_FIELDS=title,body`. Command-line flags override the environment
(`with_overrides`). The worker extends this class with its Kafka sections (`neardup_stream.worker.settings`).
"""

from __future__ import annotations

from typing import Any, Literal, TypeVar

from pydantic_settings import BaseSettings, SettingsConfigDict

from neardup_stream.config import DedupConfig
from neardup_stream.mapping import InputMapping

S = TypeVar("S", bound="EngineSettings")


class EngineSettings(BaseSettings):
    """Engine configuration and input mapping, from `NEARDUP_*` and then flags."""

    model_config = SettingsConfigDict(
        env_prefix="NEARDUP_", env_nested_delimiter="__", frozen=True, extra="ignore"
    )

    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    dedup: DedupConfig = DedupConfig()
    input: InputMapping = InputMapping()

    def with_overrides(self: S, overrides: dict[str, dict[str, Any]]) -> S:
        """A copy with per-section fields replaced where the value is not None (validated)."""
        data = self.model_dump()
        for section, values in overrides.items():
            given = {k: v for k, v in values.items() if v is not None}
            if isinstance(data.get(section), dict):
                data[section].update(given)
            elif given:
                raise ValueError(f"unknown settings section {section!r}")
        self._keep_secrets(data)
        return type(self).model_validate(data)

    def _keep_secrets(self, data: dict[str, Any]) -> None:
        """Hook: put unwrapped secrets back into a dump before validating it again."""

    def redacted(self) -> dict[str, Any]:
        """The effective configuration with secrets masked, for logging."""
        return self.model_dump(mode="json")
