"""`PLANGATE_SANDBOX` and `PLANGATE_SANDBOX_PATHS` as values (pure): what the settings read and the
terraform sandbox (workers.adapters.terraform.sandbox) uses."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

MODES = ("bwrap", "off")


@dataclass(frozen=True)
class Grant:
    """A host path the operator makes visible inside every sandbox (`PLANGATE_SANDBOX_PATHS`)."""

    path: Path
    writable: bool = False


def parse_grants(value: str) -> tuple[Grant, ...]:
    """`"/srv/state:rw, /etc/aws"` → grants; ValueError naming the bad item."""
    grants = []
    for item in (part.strip() for part in value.split(",")):
        if not item:
            continue
        path, writable = (item[:-3], True) if item.endswith(":rw") else (item.removesuffix(":ro"), False)
        if not path.startswith("/"):
            raise ValueError(f"{item!r} is not an absolute path")
        if ":" in path:
            raise ValueError(f"{item!r}: only :rw or :ro may follow a path")
        grants.append(Grant(Path(os.path.normpath(path)), writable))
    return tuple(grants)
