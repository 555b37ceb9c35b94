"""How an input message becomes a document: where its id, text and event time come from.

Crawlers and news feeds do not all publish `{"id", "text"}`. An `InputMapping` says:

* `value_format`: `json` (an object) or `text` (the whole value, UTF-8, is the text);
* the id: a top-level JSON field (`id_field`), or the message key (`id_from_key`, and always
  with `text` values);
* the text: one or more fields joined with `text_separator` (e.g. `title` + `body`); fields
  that are absent or null are left out, and at least one must be present;
* the event time: `timestamp_field` (ISO 8601 or epoch seconds), or none;
* the dedup domain (`domain_of`): a JSON field, a header, or the key up to a separator;
  documents are compared only within their domain, and there is one ("") by default.

The worker and the offline `dedup` command read the same mapping (flags or `NEARDUP_INPUT__*`),
so a worker's decisions can be reproduced offline.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic_settings import NoDecode

from neardup_stream.models import Document, Parsed

DEFAULT_TEXT_FIELDS = ("text",)


class InputMapping(BaseModel):
    """Where a message's id, text and timestamp are. Immutable; validated at construction."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    value_format: Literal["json", "text"] = Field(
        "json", description="json: an object with fields; text: the whole value is the text"
    )
    id_field: str = Field("id", min_length=1, description="JSON field holding the document id")
    id_from_key: bool = Field(
        False, description="take the id from the message key instead of a field"
    )
    # NoDecode: pydantic-settings would parse NEARDUP_INPUT__TEXT_FIELDS as JSON only.
    text_fields: Annotated[tuple[str, ...], NoDecode] = Field(
        DEFAULT_TEXT_FIELDS, description="JSON fields joined into the compared text"
    )
    text_separator: str = Field("\n\n", description="placed between joined text fields")
    timestamp_field: str | None = Field(
        "timestamp", description="JSON field with the event time (ISO 8601 or epoch seconds)"
    )

    domain_field: str | None = Field(
        None, description="JSON field naming the dedup domain (documents compare only within one)"
    )
    domain_header: str | None = Field(
        None, description="message header naming the dedup domain (worker only)"
    )
    domain_key_separator: str | None = Field(
        None, description="the domain is the message key up to this separator (worker only)"
    )

    @field_validator("text_fields", mode="before")
    @classmethod
    def _split(cls, value: object) -> object:
        if isinstance(value, str) and value.lstrip().startswith("["):  # a JSON list
            try:
                return json.loads(value)
            except ValueError:
                raise ValueError(
                    "text_fields must be comma-separated names or a JSON list of them"
                ) from None
        if isinstance(value, str):  # "title,body" from a flag or the environment
            return tuple(part.strip() for part in value.split(","))
        return value

    @model_validator(mode="after")
    def _check(self) -> InputMapping:
        if not self.text_fields or any(not f for f in self.text_fields):
            raise ValueError("text_fields must name at least one field, none of them empty")
        if len(set(self.text_fields)) != len(self.text_fields):
            raise ValueError(f"text_fields has a repeated field: {list(self.text_fields)}")
        if not self.id_from_key and self.id_field in self.text_fields:
            raise ValueError(f"id_field {self.id_field!r} is also a text field")
        return self

    @property
    def id_source(self) -> Literal["key", "field"]:
        """Where ids come from: the message key (text values, or `id_from_key`) or a field."""
        return "key" if self.id_from_key or self.value_format == "text" else "field"

    @property
    def has_domains(self) -> bool:
        """Whether documents are split into dedup domains (any domain setting is given)."""
        return any(
            v is not None
            for v in (self.domain_field, self.domain_header, self.domain_key_separator)
        )

    @property
    def is_default(self) -> bool:
        """`{"id", "text", "timestamp"}` objects: the parser's fast path applies (it keeps every
        field, so the domain settings do not matter to it)."""
        unscoped = {"domain_field": None, "domain_header": None, "domain_key_separator": None}
        return self.model_copy(update=unscoped) == DEFAULT_MAPPING


DEFAULT_MAPPING = InputMapping()


def domain_of(
    mapping: InputMapping,
    doc: Parsed,
    key: bytes | None = None,
    headers: Sequence[tuple[str, bytes | None]] = (),
) -> str:
    """The dedup domain of a document: field, then header, then key prefix; "" when none."""
    if mapping.domain_field is not None and isinstance(doc, Document):  # (never plain then)
        value = (doc.model_extra or {}).get(mapping.domain_field)
        if value is None and mapping.domain_field in Document.model_fields:
            value = getattr(doc, mapping.domain_field)
        if value is not None:
            return value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    if mapping.domain_header is not None:
        for name, raw in headers:
            if name == mapping.domain_header and raw is not None:
                return raw.decode("utf-8", "replace")
    if mapping.domain_key_separator is not None and key is not None:
        text = key.decode("utf-8", "replace")
        head, sep, _ = text.partition(mapping.domain_key_separator)
        if sep:
            return head
    return ""
