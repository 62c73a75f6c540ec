"""The one-time code that keeps `/setup` to whoever can read `plangate web`'s log.

plangate trusts the App its `/setup` creates, so on a fresh install that page must not belong to whoever
reaches the host first. The setup process makes a code at start-up, logs it, and `/setup` asks for it.
"""

from __future__ import annotations

import hmac
import logging
import secrets
from urllib.parse import parse_qs

from starlette.requests import Request

log = logging.getLogger("plangate.setup")

FIELD = "code"  # the form field `/setup` reads the code from
_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O or 1/I: read in a log, maybe typed by hand
_GROUPS, _GROUP = 5, 4  # 20 symbols of 32: 100 bits, beyond guessing however fast requests come
_MAX_FORM = 1024  # the form holds one short field: a larger body is not a code


def new() -> str:
    """A fresh code in groups of four, e.g. `K7QM-2XRD-...`."""
    symbols = "".join(secrets.choice(_ALPHABET) for _ in range(_GROUPS * _GROUP))
    return "-".join(symbols[i : i + _GROUP] for i in range(0, len(symbols), _GROUP))


def announce(code: str) -> None:
    """The one log line an operator looks for; it holds the code and nothing else secret."""
    log.warning("setup code: %s (enter it at /setup; a restart makes a new one)", code)


def _canonical(code: str) -> bytes:
    return "".join(code.split()).replace("-", "").upper().encode()


def matches(expected: str, given: str | None) -> bool:
    """Whether `given` is the code, ignoring case, spaces and dashes; compared in constant time."""
    return given is not None and hmac.compare_digest(_canonical(expected), _canonical(given))


async def submitted(request: Request) -> str | None:
    """The code field of a POSTed form, else None: never from the URL, which proxies and browsers keep."""
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if request.method != "POST" or content_type != "application/x-www-form-urlencoded":
        return None
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > _MAX_FORM:
            return None
    try:
        values = parse_qs(body.decode("ascii"), keep_blank_values=True, max_num_fields=4).get(FIELD, [])
    except ValueError:  # not ASCII, or more fields than the form has
        return None
    return values[0] if len(values) == 1 else None
