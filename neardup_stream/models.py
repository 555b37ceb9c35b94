"""The data model at the edges: input `Document`, output `Decision`, and `ErrorRecord`.

These are the message formats of the CLI and the Kafka worker; `json_schemas()` exports them
(see `neardup-stream schemas`).
"""

from __future__ import annotations

import base64
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

MAX_ID_CHARS = 512
MAX_TEXT_CHARS = 2_000_000

Method = Literal["exact", "simhash", "minhash"]
METHODS: tuple[Method, ...] = ("exact", "simhash", "minhash")


class Document(BaseModel):
    """A document to deduplicate. Unknown fields are kept and passed through."""

    model_config = ConfigDict(extra="allow", frozen=True, str_strip_whitespace=False)

    id: str = Field(min_length=1, max_length=MAX_ID_CHARS, description="stable, unique id")
    text: str = Field(max_length=MAX_TEXT_CHARS, description="the content compared")
    title: str | None = None
    url: str | None = None
    lang: str | None = None
    timestamp: datetime | None = Field(None, description="event time; retention uses it")
    metadata: dict[str, Any] | None = None

    @field_validator("id")
    @classmethod
    def _id_printable(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("id must not be blank")
        if "\x00" in v:
            raise ValueError("id must not contain NUL characters")
        return v


class Decision(BaseModel):
    """The verdict on one document."""

    model_config = ConfigDict(frozen=True)

    id: str
    decision: Literal["unique", "duplicate"]
    duplicate_of: str | None = Field(None, description="the earlier document it matched best")
    representative: str | None = Field(None, description="first document of that cluster")
    similarity: float | None = Field(None, ge=0, le=1, description="Jaccard (estimated or exact)")
    method: Method | None = Field(None, description="which index matched")

    @property
    def is_duplicate(self) -> bool:
        return self.decision == "duplicate"


class ErrorRecord(BaseModel):
    """Bad input: why it was rejected, where it came from, and the original bytes."""

    model_config = ConfigDict(frozen=True)

    reason: str = Field(description="machine-readable cause, e.g. invalid_json, missing_id")
    message: str = Field(description="human-readable explanation")
    source: dict[str, Any] = Field(
        default_factory=dict, description="topic/partition/offset or line"
    )
    raw_base64: str = Field(description="the original bytes, base64-encoded")
    at: datetime

    @classmethod
    def build(cls, reason: str, message: str, raw: bytes, **source: Any) -> ErrorRecord:
        return cls(
            reason=reason,
            message=message,
            source=source,
            raw_base64=base64.b64encode(raw).decode("ascii"),
            at=datetime.now().astimezone(),
        )


def json_schemas() -> dict[str, dict[str, Any]]:
    """JSON Schemas of the public message formats, by model name."""
    return {m.__name__: m.model_json_schema() for m in (Document, Decision, ErrorRecord)}
