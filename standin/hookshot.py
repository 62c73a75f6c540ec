"""Webhooks GitHub sends because of an API call (a check run created or completed by the App itself).

GitHub answers the call first and delivers later; these are queued at the call and delivered in order
on one background thread, so a quick create-then-complete still arrives as `created` before `completed`.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from typing import Any

from standin.delivery import Delivery


class Hookshot:
    """An ordered queue of deliveries; `deliver` (set by the facade) sends one, on the worker thread."""

    def __init__(self) -> None:
        self.deliver: Callable[[Delivery], None] = lambda item: None
        self._pending: deque[Delivery] = deque()
        self._busy = False
        self._changed = threading.Condition()

    def emit(self, event: str, payload: dict[str, Any]) -> None:
        with self._changed:
            self._pending.append(Delivery(event, payload))
            if not self._busy:
                self._busy = True
                threading.Thread(target=self._drain, name="standin-hookshot", daemon=True).start()

    def wait(self, timeout: float = 10.0) -> None:
        """Until everything emitted so far has been delivered (tests call this before looking)."""
        with self._changed:
            if not self._changed.wait_for(lambda: not self._busy, timeout):
                raise TimeoutError("webhook deliveries still pending")

    def _drain(self) -> None:
        try:
            while (item := self._next()) is not None:
                self.deliver(item)
        except BaseException:  # a broken delivery must not leave the queue marked busy forever
            with self._changed:
                self._busy = False
                self._changed.notify_all()
            raise

    def _next(self) -> Delivery | None:
        """The next delivery, or None after marking the queue idle (in one step, so no emit is missed)."""
        with self._changed:
            if self._pending:
                return self._pending.popleft()
            self._busy = False
            self._changed.notify_all()
            return None
