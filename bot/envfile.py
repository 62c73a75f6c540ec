"""Write the App's credentials into the operator's .env: mode 0600 from the first byte, replaced atomically.

Readers are docker compose `env_file:`, `set -a; . ./.env` and systemd `EnvironmentFile=`, so every
value is written unquoted and must be made of characters all three read the same way.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
from collections.abc import Mapping
from pathlib import Path

APP_ID = "GITHUB_APP_ID"
_NAME = re.compile(r"\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=")
_PLAIN_VALUE = re.compile(r"[A-Za-z0-9+/=._:@-]+")


class EnvFileError(Exception):
    """The file cannot be read or written; str() names the file and the reason, never a value."""


def read(path: Path) -> str:
    """The file's text; empty when it does not exist yet."""
    try:
        return path.read_text()
    except FileNotFoundError:
        return ""
    except (OSError, UnicodeDecodeError) as exc:
        raise EnvFileError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None


def assigned(text: str) -> set[str]:
    """The variable names the file assigns (comments and blank lines ignored)."""
    names = set()
    for line in text.splitlines():
        match = _NAME.match(line)
        if match and not line.lstrip().startswith("#"):
            names.add(match.group(1))
    return names


def holds_app(path: Path) -> bool:
    """Setup never overwrites an App someone already created: its key cannot be fetched again."""
    return APP_ID in assigned(read(path))


def merge(existing: str, values: Mapping[str, str]) -> str:
    """Keep every other line of the file; drop old assignments of `values`' names; append the new ones."""
    kept = []
    for line in existing.splitlines():
        match = _NAME.match(line)
        if match and not line.lstrip().startswith("#") and match.group(1) in values:
            continue
        kept.append(line)
    while kept and not kept[-1].strip():
        kept.pop()
    block = ["# GitHub App created by plangate's /setup", *(f"{name}={value}" for name, value in values.items())]
    return "\n".join([*kept, "", *block] if kept else block) + "\n"


def write(path: Path, values: Mapping[str, str]) -> None:
    """Write `values` into `path` (other lines kept): temp file made 0600 with O_EXCL, fsync, rename."""
    for name, value in values.items():
        if not _PLAIN_VALUE.fullmatch(value):
            raise EnvFileError(f"{name}: the value has characters a .env line cannot carry unquoted")
    existing = read(path)
    if APP_ID in assigned(existing):
        raise EnvFileError(f"{path} already holds {APP_ID}; remove the App settings from it to create another App")
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "w") as handle:
            os.fchmod(handle.fileno(), 0o600)  # the umask cannot widen it, and it is 0600 before any byte
            handle.write(merge(existing, values))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise EnvFileError(f"cannot write {path}: {exc.strerror or exc}") from None
    _fsync_dir(path.parent)


def _fsync_dir(directory: Path) -> None:
    """Make the rename durable; some filesystems cannot open a directory, which only costs durability."""
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)
