"""The link from a run-log entry to its run page: `/runs/{run}` on this host, only for a well-formed run id."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

RUN_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")


def run_path(run: Any) -> str:
    """`/runs/ID`, or "" for anything that is not a run id: the field is read from Redis, so a value that
    could climb out of the path (`../`, `//host`, a scheme) never becomes a link."""
    if not isinstance(run, str) or RUN_ID.fullmatch(run) is None:
        return ""
    return "/runs/" + quote(run, safe="")
