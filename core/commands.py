"""Slash-command parsing (pure): a comment body → Command, NearMiss or None.

Only the first non-empty line of a new comment can be a command, and only when it is plain
text that starts with `/`: quoted lines, fenced or indented code, and commands in the middle of
a sentence are never commands. An exact, case-sensitive command word is required so that a
look-alike (`/approve‐destroy` with U+2010, a zero-width character, `/Approve-Destroy`) can
never approve a destroy; such near misses come back as `NearMiss` so the bot can say
"did you mean". So do commands behind invisible characters (a zero-width or non-breaking space
pasted before the slash) or written with a look-alike slash (`／`, `∕`, `⁄`): they look like a
command to whoever wrote them, and would otherwise get no answer at all. Unrelated slash words
(other bots' `/approve`, `/lgtm`, `/shrug`) give None.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from dataclasses import dataclass

COMMANDS = ("approve-destroy", "plan", "help", "apply", "accept-drift")
# `/apply` and `/accept-drift` act on the one project their issue reports
NO_ARGS = frozenset({"help", "apply", "accept-drift"})
PROJECT_NAME = re.compile(r"[A-Za-z0-9._/-]+")
# 7 to 40 lower-case hex digits name a commit, never a project (GitHub's short SHAs are 7+).
SHA_PREFIX = re.compile(r"[0-9a-f]{7,40}")
# A typo scores >= 0.8 against its command ("/aprove-destroy", "/plans", "/replan"); a different
# word does not ("/approve" 0.64, "/plan-it" 0.73, "/hold" vs help 0.5), so it stays silent.
NEAR_MISS_CUTOFF = 0.8
_MAX_WORD = 64  # longer first words are not worth a fuzzy comparison
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
# Slashes NFKC leaves alone (it maps the fullwidth ／ itself): division, fraction, big solidus, box drawing.
_SLASHES = frozenset("\u2215\u2044\u29f8\u2571")
# Invisible characters that are neither format (Cf) nor space (Zs) characters: Hangul fillers, braille blank.
_BLANKS = frozenset("\u115f\u1160\u3164\uffa0\u2800")


@dataclass(frozen=True)
class Command:
    name: str  # one of COMMANDS
    projects: tuple[str, ...]  # unique, in the order written; empty = all affected projects
    sha: str | None = None  # `/approve-destroy SHA`: approve only if the latest plan is of this commit


@dataclass(frozen=True)
class NearMiss:
    """The first line looks like a command but is not one; `reason` says why, for the reply."""

    written: str
    suggestion: str  # the command the author probably meant, without the slash
    reason: str


def should_consider(event_action: str, comment_user_type: str) -> bool:
    """Only newly created comments by non-bots are commands (edits and deletions never are)."""
    return event_action == "created" and comment_user_type.casefold() != "bot"


def first_line(body: str) -> str | None:
    """The first line holding anything but whitespace, unstripped (its indentation matters)."""
    for line in _LINE_BREAK.split(body):
        if line.strip():
            return line
    return None


def _indent_columns(line: str) -> int:
    """Markdown indentation width: spaces count 1, a tab advances to the next multiple of 4."""
    col = 0
    for ch in line:
        if ch == " ":
            col += 1
        elif ch == "\t":
            col += 4 - col % 4
        else:
            break
    return col


def _fold(word: str) -> str:
    """Compare-form for near misses: NFKC, casefold, dashes and `_` → `-`, invisible chars dropped."""
    out = []
    for ch in unicodedata.normalize("NFKC", word).casefold():
        category = unicodedata.category(ch)
        if category == "Cf":
            continue
        out.append("-" if ch == "_" or category == "Pd" else ch)
    return "".join(out)


def _near_miss(words: list[str]) -> NearMiss | None:
    head = words[0]
    tail = words[1] if len(words) > 1 else ""
    if head == "/" and _fold(tail) in COMMANDS:
        return NearMiss(f"/ {tail}", _fold(tail), "there must be no space after the slash")
    if len(head) > _MAX_WORD:
        return None
    folded = _fold(head[1:])
    if folded in COMMANDS:
        return NearMiss(head, folded, "commands are written exactly, in lower case")
    joined = f"{folded}-{_fold(tail)}"
    if tail and joined in COMMANDS:
        return NearMiss(f"{head} {tail}", joined, "the command is one word")
    close = difflib.get_close_matches(folded, COMMANDS, n=1, cutoff=NEAR_MISS_CUTOFF)
    if close:
        return NearMiss(head, close[0], "unknown command")
    return None


def _invisible(ch: str) -> bool:
    return unicodedata.category(ch) in ("Cf", "Cc", "Zs", "Zl", "Zp") or ch in _BLANKS


def _disguised(line: str) -> NearMiss | None:
    """A command behind invisible characters or written with a look-alike slash: a near miss (never the
    command), the reason naming the character that is in the way."""
    text = line.lstrip(" \t")
    lead = ""
    while text and _invisible(text[0]):
        lead, text = lead + text[0], text[1:]
    if not text:
        return None
    slash = unicodedata.normalize("NFKC", text[0])
    if slash != "/" and text[0] not in _SLASHES:
        return None
    if lead:
        reason = f"an invisible character ({_name(lead[0])}) comes before the slash"
    else:
        reason = f"{_name(text[0])} is not the slash `/`"
    words = ("/" + text[1:]).split()
    if words[0][1:] in COMMANDS:
        return NearMiss(line.strip(), words[0][1:], reason)
    near = _near_miss(words)
    return None if near is None else NearMiss(line.strip(), near.suggestion, f"{reason}; {near.reason}")


def _name(ch: str) -> str:
    return f"U+{ord(ch):04X} {unicodedata.name(ch, '')}".strip()


def parse_command(body: str) -> Command | NearMiss | None:
    """The command on the first non-empty line of `body`, a near miss, or None."""
    line = first_line(body)
    if line is None or _indent_columns(line) >= 4:  # 4+ columns: an indented code block
        return None
    if not line.lstrip(" \t").startswith("/"):
        return _disguised(line)
    words = line.split()
    name = words[0][1:]
    if name not in COMMANDS:
        return _near_miss(words)
    args = words[1:]
    if name in NO_ARGS and args:
        return NearMiss(line.strip(), name, f"/{name} takes no arguments")
    bad = [a for a in args if not PROJECT_NAME.fullmatch(a)]
    if bad:
        return NearMiss(line.strip(), name, f"{bad[0]!r} is not a project name (letters, digits, . _ / - only)")
    shas = [a for a in args if SHA_PREFIX.fullmatch(a)] if name == "approve-destroy" else []
    if len(set(shas)) > 1:
        return NearMiss(line.strip(), name, "name one commit at most")
    projects = tuple(dict.fromkeys(a for a in args if a not in shas))
    return Command(name, projects, shas[0] if shas else None)
