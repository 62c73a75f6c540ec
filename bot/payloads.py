"""Webhook bodies → the dict a handler reads. `pull_request`, the busiest event, is decoded with a typed
msgspec schema of only the fields plangate reads (bot/events/pulls.py): the other ~600 values of a
25 KB payload are validated as JSON and skipped instead of built, which halves the request's parse
time. Every other event is parsed whole with orjson.
"""

from __future__ import annotations

from typing import Any

import msgspec
import orjson
from msgspec import UNSET, Struct, UnsetType


class Malformed(ValueError):
    """The body is JSON, but not the payload its event promises (the message says what is wrong)."""


class NotJSON(ValueError):
    """The body is not JSON at all."""


class _Login(Struct):
    login: str


class _Repository(Struct):
    full_name: str


class _Ref(Struct):
    sha: str
    repo: _Repository | UnsetType | None = UNSET  # null once a fork is deleted


class _Pull(Struct, omit_defaults=True):
    number: int
    head: _Ref
    user: _Login
    base: _Ref | UnsetType = UNSET
    closed_at: str | UnsetType | None = UNSET  # `closed`: tells a second close of a reopened PR apart
    merged: bool | UnsetType | None = UNSET  # `closed`: merged or not, for the run log


class _Repo(Struct, omit_defaults=True):
    id: int
    full_name: str
    clone_url: str
    default_branch: str | UnsetType = UNSET


class _Installation(Struct):
    id: int


class _Changes(Struct, omit_defaults=True):
    base: dict[str, Any] | UnsetType = UNSET  # `edited`: the PR now targets another branch


class _PullRequestHook(Struct, omit_defaults=True):
    action: str
    repository: _Repo
    pull_request: _Pull
    installation: _Installation | UnsetType = UNSET
    sender: _Login | UnsetType = UNSET  # a `synchronize` sender pushed: an author of the PR
    changes: _Changes | UnsetType = UNSET


_TYPED = {"pull_request": msgspec.json.Decoder(_PullRequestHook)}


def decode(event: str, body: bytes) -> dict[str, Any]:
    """The payload as a dict (for `pull_request`, only the fields plangate reads)."""
    typed = _TYPED.get(event)
    if typed is None:
        try:
            data = orjson.loads(body)
        except orjson.JSONDecodeError:
            raise NotJSON() from None
        if not isinstance(data, dict):
            raise Malformed("payload is not a JSON object")
        return data
    try:
        found = typed.decode(body)
    except msgspec.ValidationError as exc:
        raise Malformed(f"malformed {event} payload: {exc}") from None
    except msgspec.DecodeError:
        raise NotJSON() from None
    result: dict[str, Any] = msgspec.to_builtins(found)
    return result
