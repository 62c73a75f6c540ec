"""Markdown building blocks that stay valid whatever they are given (pure).

Everything here is length-aware so the comment renderer can promise GitHub's body limit, and
every code span or fence is sized to its content so no input can break out of it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

ELLIPSIS = "…"
MAX_LINE = 1000  # one plan/error line longer than this is clipped (a one-line JSON policy, say)

# Terraform's change symbols, indented: moved to column 0 so GitHub's ```diff colours them.
_SYMBOL = re.compile(r"^( +)(-/\+|\+/-|[-+~]|<=)( .*)?$")
_BACKTICKS = re.compile(r"`+")


def clip(text: str, limit: int) -> str:
    """`text` cut to at most `limit` characters, with an ellipsis when cut."""
    if len(text) <= limit:
        return text
    return text[: max(limit - 1, 0)] + ELLIPSIS if limit > 0 else ""


def one_line(text: str, limit: int = 200) -> str:
    """Collapse whitespace/control characters (a headline must stay one line), then clip."""
    return clip(" ".join(text.split()), limit)


def code(text: str, limit: int = 10_000) -> str:
    """An inline code span that shows `text` verbatim, even when it holds backticks."""
    text = one_line(text, limit)
    longest = max((len(m) for m in _BACKTICKS.findall(text)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if longest or text.startswith(" ") or text.endswith(" ") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def fence_for(lines: Sequence[str]) -> str:
    """A backtick fence longer than any backtick run at the start of a line of the content."""
    longest = 2
    for line in lines:
        stripped = line.lstrip(" ")
        if stripped.startswith("```"):
            longest = max(longest, len(stripped) - len(stripped.lstrip("`")))
    return "`" * (longest + 1)


def diff_lines(plan_text: str) -> list[str]:
    """Plan text as lines for a ```diff block, symbols moved to column 0 as Atlantis does.

    `~` becomes `!` (GitHub highlights `!` lines, not `~` ones); indentation after the symbol is
    kept, so nesting stays readable.
    """
    out: list[str] = []
    for raw in plan_text.splitlines():
        line = clip(raw.rstrip(), MAX_LINE)
        m = _SYMBOL.match(line)
        if m:
            symbol = "!" if m.group(2) == "~" else m.group(2)
            line = f"{symbol}{m.group(1)}{m.group(3) or ''}"
        out.append(line)
    while out and not out[0]:
        out.pop(0)
    while out and not out[-1]:
        out.pop()
    return out


def plain_lines(text: str) -> list[str]:
    """Lines of command output for a plain code block, each clipped, outer blank lines dropped."""
    return [clip(line.rstrip(), MAX_LINE) for line in text.strip("\n").splitlines()]


def omitted_note(n: int) -> str:
    return f"{ELLIPSIS} {n:,} lines omitted (comment size limit) {ELLIPSIS}"


def head_tail(lines: Sequence[str], budget: int) -> list[str]:
    """`lines` (joined by newlines) within `budget` characters, keeping head and tail.

    When lines are dropped, one note line in the middle says exactly how many.
    """
    total = sum(len(line) + 1 for line in lines)
    if total <= budget:
        return list(lines)
    room = budget - len(omitted_note(len(lines))) - 1
    head: list[str] = []
    used = 0
    for line in lines:
        if used + len(line) + 1 > room // 2:
            break
        head.append(line)
        used += len(line) + 1
    tail: list[str] = []
    for line in reversed(lines[len(head) :]):
        if used + len(line) + 1 > room:
            break
        tail.append(line)
        used += len(line) + 1
    tail.reverse()
    return [*head, omitted_note(len(lines) - len(head) - len(tail)), *tail]


def fit_items(items: Sequence[str], budget: int, more: str) -> tuple[list[str], int]:
    """The longest prefix of `items` (one per line) fitting `budget` with room for a `more` line.

    `more` is a format string taking `{n}`, the exact number of items left out. Returns the lines
    (the note included when something was cut) and how many items were cut.
    """
    total = sum(len(item) + 1 for item in items)
    if total <= budget:
        return list(items), 0
    room = budget - len(more.format(n=f"{len(items):,}")) - 1
    kept: list[str] = []
    used = 0
    for item in items:
        if used + len(item) + 1 > room:
            break
        kept.append(item)
        used += len(item) + 1
    cut = len(items) - len(kept)
    return [*kept, more.format(n=f"{cut:,}")], cut


def code_block(lines: Sequence[str], lang: str = "") -> str:
    fence = fence_for(lines)
    body = "\n".join(lines)
    return f"{fence}{lang}\n{body}\n{fence}" if lines else f"{fence}{lang}\n{fence}"


def collapsed(summary: str, lines: list[str], lang: str, budget: int) -> str:
    """`lines` in a <details> code block, head and tail kept to fit `budget` (an exact omitted count)."""
    opening, closing = f"<details><summary>{summary}</summary>\n\n", "\n</details>"
    room = budget - len(opening) - len(closing) - 2 * len(fence_for(lines)) - len(lang) - 2
    return f"{opening}{code_block(head_tail(lines, max(room, 0)), lang)}{closing}"
