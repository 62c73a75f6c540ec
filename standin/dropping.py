"""uvicorn's HTTP protocol plus one ASGI extension, `standin.drop`: close the connection without any answer.

GitHub sometimes drops a connection mid-request; a client then sees a reset or "disconnected without sending a
response", never a status. ASGI has no message for that and Starlette cannot reach the socket, so the server
advertises the extension in `scope["extensions"]` and honours `send({"type": "standin.drop"})` by aborting the
transport. The message travels through every middleware on the way out, so the request log sees it too.
"""

from __future__ import annotations

from typing import Any, cast

from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

DROP = "standin.drop"


class DroppingProtocol(HttpToolsProtocol):
    """One per connection: wraps the app so a `standin.drop` message aborts this connection's transport."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.app = cast(Any, self._with_drop(cast(ASGIApp, self.app)))

    def _with_drop(self, app: ASGIApp) -> ASGIApp:
        async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] != "http":
                await app(scope, receive, send)
                return
            scope.setdefault("extensions", {})[DROP] = {}

            async def drop_or_send(message: Message) -> None:
                if message["type"] != DROP:
                    await send(message)
                    return
                self.transport.abort()
                # Wait until uvicorn has seen the connection go, so it does not answer a 500 in our place.
                while (await receive())["type"] != "http.disconnect":
                    pass

            await app(scope, receive, drop_or_send)

        return wrapped


def can_drop(scope: Scope) -> bool:
    return DROP in (scope.get("extensions") or {})
