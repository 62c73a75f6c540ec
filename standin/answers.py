"""Answers the stand-in's own middleware gives (rate limits, injected faults), and the note each request carries.

The note lets the request log say, for each request, whether an injected fault or a rate limit answered it.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass, field

from starlette.types import Scope, Send


def request_id() -> str:
    """A value shaped like GitHub's `x-github-request-id` (`FA2D:87B1:8879E3:1176C87:6570B7E6`)."""
    return ":".join(secrets.token_hex(8)[:n].upper() for n in (4, 4, 6, 7, 8))


@dataclass
class Answer:
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""

    @classmethod
    def json(cls, status: int, body: object, headers: dict[str, str] | None = None) -> Answer:
        content_type = {"content-type": "application/json; charset=utf-8"}
        return cls(status, {**content_type, **(headers or {})}, json.dumps(body).encode())

    async def send(self, send: Send) -> None:
        headers = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in self.headers.items()]
        headers.append((b"content-length", str(len(self.body)).encode()))
        await send({"type": "http.response.start", "status": self.status, "headers": headers})
        await send({"type": "http.response.body", "body": self.body})


@dataclass
class Note:
    """Set by the layers inside the request log before they answer."""

    fault: bool = False  # an injected fault answered (or dropped) the request
    rate_limit: str | None = None  # "primary" | "secondary": the answer was a rate-limit refusal


NOTE = "standin.note"


def note_of(scope: Scope) -> Note:
    note = scope.setdefault(NOTE, Note())
    assert isinstance(note, Note)
    return note
