"""List items and counts for gated keys, by kind, in replies and comments (pure)."""

from __future__ import annotations

from collections.abc import Sequence

from core.gated import KINDS, kind_of


def span(text: str) -> str:
    """Inline code that shows an address exactly (spaces kept), even with backticks inside."""
    text = text.replace("\r", " ").replace("\n", " ")
    longest, run = 0, 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    ticks = "`" * (longest + 1)
    edge = text.startswith("`") or text.endswith("`") or (text.startswith(" ") and text.endswith(" "))
    pad = " " if edge else ""  # CommonMark strips exactly one such space from each side
    return f"{ticks}{pad}{text}{pad}{ticks}"


def destroy_item(key: str) -> str:
    """A list item for one destroy key; a deposed object is named the way the plan comment names it."""
    address, sep, deposed = key.rpartition(" (deposed ")
    if sep and deposed.endswith(")") and address:
        return f"- {span(address)} (deposed object {span(deposed[:-1])})"
    return f"- {span(key)}"


_NOUNS = {
    "destroy": ("destroy", "destroys"),
    "change": ("gated change (change_rules)", "gated changes (change_rules)"),
    "limit": ("passed limit (change_limits)", "passed limits (change_limits)"),
    "code": ("change that runs code at apply", "changes that run code at apply"),
}


def gated_phrase(keys: Sequence[str] | frozenset[str]) -> str:
    """ "2 destroys", "1 destroy and 1 change that runs code at apply", "1 destroy, 2 gated changes
    (change_rules) and 1 passed limit (change_limits)"…: what `keys` are, by kind."""
    found = [kind_of(k) for k in keys]
    parts = [f"{n:,} {_NOUNS[kind][n != 1]}" for kind in KINDS if (n := found.count(kind))]
    if not parts:
        return "0 destroys"
    return parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} and {parts[-1]}"


def gated_item(key: str) -> str:
    """A list item for one approved key, named by its kind (a destroy as the plan comment names it)."""
    kind = kind_of(key)
    if kind == "change":
        action, _, address = key.partition(" ")
        return f"- {action} {span(address)}"
    if kind == "limit":
        return f"- limit {span(key.partition(' ')[2])}"
    return destroy_item(key)
