"""Run the stand-in under uvicorn in a background thread on loopback."""

from __future__ import annotations

import threading
import time
from types import TracebackType

import uvicorn

from standin.app import create_app
from standin.dropping import DroppingProtocol
from standin.facade import StandIn


class Running:
    """A started stand-in: `base_url` is the API base (GITHUB_API_URL) and the git host."""

    def __init__(self, server: uvicorn.Server, thread: threading.Thread, base_url: str) -> None:
        self._server = server
        self._thread = thread
        self.base_url = base_url

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(10)

    def __enter__(self) -> Running:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def start(standin: StandIn, host: str = "127.0.0.1", port: int = 0) -> Running:
    """Serve until `.stop()`; port 0 picks a free port. Sets `standin.base_url`."""
    app = create_app(standin.state, standin.faults, standin.limits)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="off", http=DroppingProtocol)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="standin", daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the GitHub stand-in did not start")
        time.sleep(0.01)
    bound = server.servers[0].sockets[0].getsockname()
    base_url = f"http://{host}:{bound[1]}"
    standin.base_url = base_url
    return Running(server, thread, base_url)
