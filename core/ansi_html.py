"""One line of terraform's output as HTML (pure): ANSI SGR colours and styles become `<span class>`, every
other escape sequence and control character is dropped, and everything else is escaped text.

Output comes from a plan that runs a pull request's code, so a line is hostile: it may carry markup, a
terminal sequence that would rewrite what the reader sees (cursor moves, OSC hyperlinks and titles) or a
bidi override that reorders an address on screen. Only the SGR attributes below survive, as classes of a
fixed set (`a-b` bold, `a-d` dim, `a-i` italic, `a-u` underline, `a-fN` / `a-gN` foreground / background
colour N of the 16 basic ones); colours beyond those 16 (256-colour and RGB) are read and ignored.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, replace
from functools import cache, lru_cache

# CSI (ESC [ params intermediates final), OSC (ESC ] … BEL or ST, or to the end of the line), then any other
# escape (ESC intermediates final). A lone ESC left over is a control character and is dropped with them.
_ESCAPES = re.compile(r"\x1b\[([0-?]*)([ -/]*)([@-~])|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\|$)|\x1b[ -/]*[0-~]")
_BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
_DROPPED = re.compile(f"[\x00-\x08\x0a-\x1f\x7f-\x9f{_BIDI}\ud800-\udfff]")
_SGR_PARAMS = re.compile(r"[0-9;]*")
UNKNOWN = 10**6  # an SGR parameter of more digits than any code has


@dataclass(frozen=True)
class Style:
    bold: bool = False
    dim: bool = False
    italic: bool = False
    underline: bool = False
    fg: int | None = None  # 0-15
    bg: int | None = None  # 0-15


PLAIN = Style()


@cache
def classes(style: Style) -> str:
    names = [name for name, on in (("a-b", style.bold), ("a-d", style.dim), ("a-i", style.italic)) if on]
    names += ["a-u"] if style.underline else []
    names += [f"a-f{style.fg}"] if style.fg is not None else []
    names += [f"a-g{style.bg}"] if style.bg is not None else []
    return " ".join(names)


def segments(line: str) -> list[tuple[Style, str]]:
    """The line's visible text in runs of one style, controls dropped; empty runs left out."""
    if "\x1b" not in line:
        text = _DROPPED.sub("", line)
        return [(PLAIN, text)] if text else []
    found: list[tuple[Style, str]] = []
    style, at = PLAIN, 0
    for match in _ESCAPES.finditer(line):
        found.append((style, _DROPPED.sub("", line[at : match.start()])))
        params, intermediates, final = match.groups()
        if final == "m" and not intermediates and _SGR_PARAMS.fullmatch(params or ""):
            style = _apply(style, params)
        at = match.end()
    found.append((style, _DROPPED.sub("", line[at:])))
    return [(s, text) for s, text in found if text]


def to_html(line: str) -> str:
    """The line as HTML: escaped text, in `<span class="…">` where a style is on."""
    parts = []
    for style, text in segments(line):
        escaped = html.escape(text, quote=True)
        names = classes(style)
        parts.append(f'<span class="{names}">{escaped}</span>' if names else escaped)
    return "".join(parts)


@lru_cache(maxsize=1024)  # terraform repeats a few sequences; a hostile line's many are bounded
def _apply(style: Style, params: str) -> Style:
    codes = [_code(p) for p in params.split(";")] if params else [0]
    i = 0
    while i < len(codes):
        code = codes[i]
        if code in (38, 48):
            colour, i = _extended(codes, i)
            style = replace(style, fg=colour) if code == 38 else replace(style, bg=colour)
            continue
        style = _one(style, code)
        i += 1
    return style


def _code(param: str) -> int:
    """One SGR parameter; one too long to be any code (Python's int() refuses more than 4,300 digits) is
    UNKNOWN, which no code or colour matches."""
    digits = param.lstrip("0")
    if not digits:
        return 0
    return int(digits) if len(digits) <= 6 else UNKNOWN


def _extended(codes: list[int], i: int) -> tuple[int | None, int]:
    """38/48;5;N or 38/48;2;R;G;B: one of the 16 basic colours when N is one, else no colour; the next index."""
    kind = codes[i + 1] if i + 1 < len(codes) else None
    if kind == 5:
        n = codes[i + 2] if i + 2 < len(codes) else None
        return (n if n is not None and n < 16 else None), i + 3
    if kind == 2:
        return None, i + 5
    return None, i + 2


def _one(style: Style, code: int) -> Style:
    if code == 0:
        return PLAIN
    toggles = {
        1: {"bold": True},
        2: {"dim": True},
        3: {"italic": True},
        4: {"underline": True},
        22: {"bold": False, "dim": False},
        23: {"italic": False},
        24: {"underline": False},
        39: {"fg": None},
        49: {"bg": None},
    }
    if code in toggles:
        return replace(style, **toggles[code])  # type: ignore[arg-type]
    if 30 <= code <= 37:
        return replace(style, fg=code - 30)
    if 90 <= code <= 97:
        return replace(style, fg=code - 90 + 8)
    if 40 <= code <= 47:
        return replace(style, bg=code - 40)
    if 100 <= code <= 107:
        return replace(style, bg=code - 100 + 8)
    return style
