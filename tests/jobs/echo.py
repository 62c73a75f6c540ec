"""A job that returns what it was given (for tests/test_enqueue.py)."""

from __future__ import annotations

from core.contract import PushRequest


def echo(request: PushRequest) -> str:
    return f"{request.repo}@{request.after}"
