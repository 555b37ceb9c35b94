"""The data model at the edges: input `Document`, output `Decision`, and `ErrorRecord`.

These are the message formats of the CLI and the Kafka worker; `json_schemas()` exports them
(see `neardup-stream schemas`).
"""

from __future__ import annotations

import base64
import hashlib
from datetime import UTC, datetime
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, field_validator

MAX_ID_CHARS = 512
MAX_TEXT_CHARS = 2_000_000
MAX_MESSAGE_CHARS = 2_000

Method = Literal["exact", "simhash", "minhash", "sentences"]
METHODS: tuple[Method, ...] = ("exact", "simhash", "minhash", "sentences")
DecisionKind = Literal["unique", "duplicate"]


class Document(BaseModel):
    """A document to deduplicate. Unknown fields are kept and passed through.

    Its text must hold something other than whitespace (Python's `str.isspace`): an empty
    text is rejected, as `empty_text` by `parsing.parse_document`, with a ValidationError here.
    """

    model_config = ConfigDict(extra="allow", frozen=True, str_strip_whitespace=False)

    id: str = Field(min_length=1, max_length=MAX_ID_CHARS, description="stable, unique id")
    text: str = Field(
        max_length=MAX_TEXT_CHARS,
        description="the content compared; must hold something other than whitespace",
    )
    title: str | None = None
    url: str | None = None
    lang: str | None = None
    timestamp: datetime | None = Field(
        None, description="event time; retention uses it; UTC unless it names its offset"
    )
    metadata: dict[str, Any] | None = None

    @field_validator("timestamp")
    @classmethod
    def _timestamp_in_utc(cls, v: datetime | None) -> datetime | None:
        # Without an offset, a time is UTC: read in the host's own zone it was filed under
        # another second on each machine, and near year 1 or 9999 it could not be converted
        # at all (`datetime.timestamp` raised, and the engine with it).
        return v if v is None or v.tzinfo is not None else v.replace(tzinfo=UTC)

    @field_validator("id")
    @classmethod
    def _id_printable(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("id must not be blank")
        if "\x00" in v:
            raise ValueError("id must not contain NUL characters")
        return v

    @field_validator("text")
    @classmethod
    def _text_not_blank(cls, v: str) -> str:
        # An empty text has nothing to compare: every one would be an exact copy of the
        # first. It is refused (reason `empty_text` at the parse step), never decided.
        if not v or v.isspace():
            raise ValueError("text is empty or only whitespace: there is nothing to compare")
        return v


class PlainDocument(NamedTuple):
    """The id and text of an input `Document` would accept as it is, without building one
    (`plain_objects.plain_document`): what the engine reads of a document."""

    id: str
    text: str
    timestamp: datetime | None = None  # (always None: an own timestamp is not plain)


Parsed = Document | PlainDocument  # an admitted input, either way


class Decision(BaseModel):
    """The verdict on one document."""

    model_config = ConfigDict(frozen=True)

    id: str
    decision: DecisionKind
    duplicate_of: str | None = Field(None, description="the earlier document it matched best")
    representative: str | None = Field(None, description="first document of that cluster")
    similarity: float | None = Field(None, ge=0, le=1, description="Jaccard (estimated or exact)")
    method: Method | None = Field(None, description="which index matched")
    update: bool = Field(
        False,
        description=(
            "the id was seen before with other content: this new version was decided afresh "
            "against the other documents (never its own earlier version), which it replaces"
        ),
    )

    @property
    def is_duplicate(self) -> bool:
        return self.decision == "duplicate"


class ErrorRecord(BaseModel):
    """Bad input: why it was rejected, where it came from, and a bounded copy of its bytes.

    A dead letter must always fit on the dead-letter topic, so it carries at most
    `payload_limit` bytes of the original (base64) with the full length and a SHA-256 of
    the whole input: enough to find, compare and replay the original from the source.
    """

    model_config = ConfigDict(frozen=True)

    reason: str = Field(
        description=(
            "machine-readable cause: tombstone, too_large, invalid_utf8, invalid_json, "
            "not_an_object, missing_id, missing_text, empty_text, invalid_id, invalid_field "
            "(the parse step), unpublishable or internal_error (the worker)"
        )
    )
    message: str = Field(max_length=MAX_MESSAGE_CHARS, description="human-readable explanation")
    source: dict[str, Any] = Field(
        default_factory=dict, description="topic/partition/offset/timestamp, or line"
    )
    raw_length: int = Field(ge=0, description="length of the original input in bytes")
    raw_sha256: str = Field(description="SHA-256 of the whole original input, hex")
    raw_base64: str = Field(description="the first bytes of the original input, base64")
    raw_truncated: bool = Field(description="raw_base64 holds only a prefix of the input")
    at: datetime

    @classmethod
    def build(
        cls, reason: str, message: str, raw: bytes, payload_limit: int, **source: Any
    ) -> ErrorRecord:
        """A dead letter for `raw` keeping at most `payload_limit` of its bytes."""
        if len(message) > MAX_MESSAGE_CHARS:
            message = message[: MAX_MESSAGE_CHARS - 1] + "…"
        return cls(
            reason=reason,
            message=message,
            source=source,
            raw_length=len(raw),
            raw_sha256=hashlib.sha256(raw).hexdigest(),
            raw_base64=base64.b64encode(raw[:payload_limit]).decode("ascii"),
            raw_truncated=len(raw) > payload_limit,
            at=datetime.now().astimezone(),
        )


def json_schemas() -> dict[str, dict[str, Any]]:
    """JSON Schemas of the public message formats, by model name."""
    return {m.__name__: m.model_json_schema() for m in (Document, Decision, ErrorRecord)}
