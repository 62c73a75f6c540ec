"""One setting's value from the environment, checked: a bad value raises SettingsError naming the
setting and the problem in one line, never echoing a secret."""

from __future__ import annotations

import re
from collections.abc import Mapping
from urllib.parse import urlparse

from core.cron import validate_schedule
from core.render.mask import PatternError, compile_pattern


class SettingsError(Exception):
    """A missing or malformed setting; str() is the one line shown to the operator."""

    def __init__(self, name: str, problem: str) -> None:
        super().__init__(f"setting {name}: {problem}")
        self.name = name


def names(env: Mapping[str, str], name: str) -> tuple[str, ...]:
    names = tuple(n.strip() for n in env.get(name, "").split(",") if n.strip())
    for item in names:
        if not re.fullmatch(r"[A-Za-z_*?\[\]!][A-Za-z0-9_*?\[\]!]*", item):
            raise SettingsError(name, f"{item!r} is not a variable name or glob")
    return names


def positive(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise SettingsError(name, f"must be a number, got {raw!r}") from None
    if value <= 0:
        raise SettingsError(name, "must be greater than 0")
    return value


def url(env: Mapping[str, str], name: str, default: str, schemes: tuple[str, ...]) -> str:
    value = env.get(name) or default
    parsed = urlparse(value)
    if parsed.scheme not in schemes or not (parsed.netloc or (parsed.scheme == "unix" and parsed.path)):
        shown = f"{parsed.scheme}://…" if "@" in value else repr(value)  # never echo a password
        raise SettingsError(name, f"must be a {' or '.join(schemes)} URL, got {shown}")
    return value.rstrip("/")


def mask_patterns(env: Mapping[str, str]) -> tuple[str, ...]:
    raw = env.get("PLANGATE_MASK_PATTERNS", "")
    patterns = tuple(p for p in raw.split("\n") if p.strip())
    for pattern in patterns:
        try:
            compile_pattern(pattern)
        except PatternError as exc:
            raise SettingsError("PLANGATE_MASK_PATTERNS", f"invalid regex {pattern!r}: {exc}") from None
    return patterns


def cron(env: Mapping[str, str], name: str) -> str | None:
    value = (env.get(name) or "").strip()
    if not value:
        return None
    try:
        return validate_schedule(value, name)
    except ValueError as exc:
        raise SettingsError(name, str(exc).removeprefix(f"{name}: ")) from None


def tf_cgroup(env: Mapping[str, str]) -> str:
    value = (env.get("PLANGATE_TF_CGROUP") or "auto").strip()
    if value not in ("auto", "off") and not value.startswith("/"):
        raise SettingsError("PLANGATE_TF_CGROUP", f"must be auto, off or an absolute path, got {value!r}")
    return value


def count(env: Mapping[str, str], name: str, default: int) -> int:
    raw = (env.get(name) or "").strip()
    if not raw:
        return default
    if not (raw.isascii() and raw.isdigit()) or int(raw) < 1:
        raise SettingsError(name, f"must be a whole number of 1 or more, got {raw!r}")
    return int(raw)


def choice(env: Mapping[str, str], name: str, choices: tuple[str, ...], default: str) -> str:
    value = (env.get(name) or default).strip()
    if value not in choices:
        raise SettingsError(name, f"must be one of {', '.join(choices)}, got {value!r}")
    return value
