"""GitHub's "Reaction Rollup": the count of each reaction that issues and comments carry in their JSON."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

REACTIONS = ("+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes")


def reactions(url: str, contents: Iterable[str]) -> dict[str, Any]:
    """`url`: the reactions list of the issue or comment; `contents`: one entry per reaction on it."""
    counts = Counter(contents)
    return {"url": url, "total_count": sum(counts.values()), **{name: counts[name] for name in REACTIONS}}
