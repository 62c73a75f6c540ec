"""Cron expressions as plangate accepts them (pure): five fields in UTC, or one of croniter's aliases."""

from __future__ import annotations

from croniter import croniter

ALIASES = frozenset({"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"})


def is_valid_schedule(expr: str) -> bool:
    """A five-field cron expression or an alias croniter understands."""
    if not isinstance(expr, str):
        return False
    text = expr.strip()
    if text.startswith("@"):
        return text.lower() in ALIASES
    return len(text.split()) == 5 and croniter.is_valid(text)


def validate_schedule(expr: str, name: str) -> str:
    """`expr` stripped, or a ValueError naming the setting or project it came from."""
    if not is_valid_schedule(expr):
        hint = " (expected five fields: minute hour day-of-month month day-of-week, in UTC)"
        raise ValueError(f"{name}: invalid cron expression {expr!r}{hint}")
    return expr.strip()
