"""Slash-command parsing: a table of real-world bodies plus properties over random ones."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.commands import COMMANDS, SHA_PREFIX, Command, NearMiss, parse_command, should_consider

AD = "approve-destroy"

TABLE: list[tuple[str, Command | NearMiss | str | None]] = [
    # exact commands
    ("/approve-destroy", Command(AD, ())),
    ("/approve-destroy dns", Command(AD, ("dns",))),
    ("/approve-destroy dns infra/net v1.2_x-y", Command(AD, ("dns", "infra/net", "v1.2_x-y"))),
    ("/approve-destroy dns dns", Command(AD, ("dns",))),
    ("/approve-destroy   dns\t net  ", Command(AD, ("dns", "net"))),
    ("/plan", Command("plan", ())),
    ("/plan .", Command("plan", (".",))),
    ("/help", Command("help", ())),
    ("  /approve-destroy", Command(AD, ())),  # up to 3 spaces: still a paragraph
    ("\n\n  \n/approve-destroy", Command(AD, ())),
    ("\r\n\r\n/approve-destroy dns\r\nthanks!", Command(AD, ("dns",))),
    ("\r/plan\rmore", Command("plan", ())),
    ("/approve-destroy\nLooks right, the bucket is empty.\n> quoted", Command(AD, ())),
    ("/approve-destroy\n```\ncode after\n```", Command(AD, ())),
    # quoted, code, mid-sentence, text before
    ("> /approve-destroy", None),
    (">/approve-destroy", None),
    ("> /approve-destroy\n/approve-destroy", None),
    ("```\n/approve-destroy\n```", None),
    ("~~~\n/approve-destroy\n~~~", None),
    ("```sh\n/approve-destroy\n```\n/approve-destroy", None),
    ("    /approve-destroy", None),
    ("\t/approve-destroy", None),
    ("  \t/approve-destroy", None),
    ("\n\n    /approve-destroy", None),
    ("`/approve-destroy`", None),
    ("please /approve-destroy", None),
    ("I will not /approve-destroy this", None),
    ("lgtm\n/approve-destroy", None),
    ("Hi!\r\n/approve-destroy", None),
    ("<!-- note -->\n/approve-destroy", None),
    ("- /approve-destroy", None),
    ("# /approve-destroy", None),
    ("", None),
    ("   \n\t\n", None),
    # look-alikes never approve
    ("/approve\u2010destroy", "near:approve-destroy"),  # U+2010 hyphen
    ("/approve\u2011destroy", "near:approve-destroy"),  # non-breaking hyphen
    ("/approve\u2013destroy", "near:approve-destroy"),  # en dash
    ("/approve-destroy\u200b", "near:approve-destroy"),  # zero-width space
    ("/approve\u200d-destroy", "near:approve-destroy"),  # zero-width joiner
    ("\u200b/approve-destroy", "near:approve-destroy"),  # invisible first character: asked, never done
    ("\ufeff/approve-destroy", "near:approve-destroy"),
    ("\u00a0/approve-destroy", "near:approve-destroy"),  # a non-breaking space is not indentation
    ("\u3000/plan", "near:plan"),
    ("\u3164/help", "near:help"),  # Hangul filler: a letter, and invisible
    ("\uff0fapprove-destroy", "near:approve-destroy"),  # fullwidth solidus
    ("\u2215approve-destroy", "near:approve-destroy"),  # division slash
    ("\u2044approve-destroy dns", "near:approve-destroy"),  # fraction slash
    ("\u200b/aprove-destroy", "near:approve-destroy"),
    ("\u200b/approve", None),  # another bot's command, hidden or not: silent
    ("\u200bhello", None),
    ("\u2215", None),
    ("/\uff41pprove-destroy", "near:approve-destroy"),  # fullwidth a
    ("/аpprove-destroy", "near:approve-destroy"),  # Cyrillic а
    # near misses
    ("/Approve-Destroy", "near:approve-destroy"),
    ("/APPROVE-DESTROY", "near:approve-destroy"),
    ("/aprove-destroy", "near:approve-destroy"),
    ("/approve_destroy", "near:approve-destroy"),
    ("/approvedestroy", "near:approve-destroy"),
    ("/approve-destory", "near:approve-destroy"),
    ("/approve-destroy.", "near:approve-destroy"),
    ("/approve destroy", "near:approve-destroy"),
    ("/ approve-destroy", "near:approve-destroy"),
    ("/Plan", "near:plan"),
    ("/plans", "near:plan"),
    ("/replan", "near:plan"),
    ("/Help", "near:help"),
    ("/help me", "near:help"),
    ("/approve-destroy dns!", "near:approve-destroy"),
    ("/approve-destroy dns, net", "near:approve-destroy"),
    ("/plan d\u00e9j\u00e0", "near:plan"),
    # unrelated slash words stay silent
    ("/approve", None),
    ("/lgtm", None),
    ("/hold", None),
    ("/shrug", None),
    ("/plan-it", None),
    ("/destroy", None),
    ("/", None),
    ("//", None),
    ("/" + "x" * 500, None),
]


@pytest.mark.parametrize(("body", "expected"), TABLE)
def test_table(body: str, expected: Command | NearMiss | str | None) -> None:
    got = parse_command(body)
    if isinstance(expected, str):
        assert isinstance(got, NearMiss), got
        assert got.suggestion == expected.removeprefix("near:")
        assert got.reason
    else:
        assert got == expected


def test_near_miss_reasons_are_specific() -> None:
    assert parse_command("/help me") == NearMiss("/help me", "help", "/help takes no arguments")
    miss = parse_command("/approve-destroy a;rm")
    assert isinstance(miss, NearMiss) and "'a;rm'" in miss.reason


@pytest.mark.parametrize(
    ("action", "user_type", "expected"),
    [
        ("created", "User", True),
        ("created", "Organization", True),
        ("created", "Bot", False),
        ("created", "bot", False),
        ("edited", "User", False),
        ("deleted", "User", False),
        ("", "User", False),
    ],
)
def test_should_consider(action: str, user_type: str, expected: bool) -> None:
    assert should_consider(action, user_type) is expected


# --- properties ---------------------------------------------------------------------------------

_VALID = re.compile(r"[A-Za-z0-9._/-]+")


def _is_exact_approval(body: str) -> bool:
    """Independent oracle: first non-empty line, stripped, is `/approve-destroy` + valid names."""
    lines = [ln for ln in re.split(r"\r\n|\r|\n", body) if ln.strip()]
    if not lines:
        return False
    parts = lines[0].lstrip(" \t").split()  # only spaces and tabs indent; the command word is exact
    return (
        lines[0].lstrip(" \t").startswith("/")
        and parts[0] == "/approve-destroy"
        and all(_VALID.fullmatch(p) for p in parts[1:])
    )


_pieces = st.sampled_from(
    [
        "/approve-destroy",
        "/plan",
        "/help",
        "/",
        ">",
        "```",
        "~~~",
        "    ",
        "  ",
        "\t",
        " ",
        "\n",
        "\r\n",
        "\r",
        "dns",
        "a/b",
        "x!",
        "\u200b",
        "\u2010",
        "-",
        "approve",
        "destroy",
        "\u00a0",
        "\u2028",
    ]
)
_bodies = st.one_of(
    st.text(),
    st.lists(st.one_of(_pieces, st.text(max_size=4)), max_size=12).map("".join),
)


@given(_bodies)
def test_random_bodies_only_approve_when_the_first_line_says_so(body: str) -> None:
    got = parse_command(body)
    if isinstance(got, Command) and got.name == AD:
        assert _is_exact_approval(body)
        assert all(_VALID.fullmatch(p) for p in got.projects)


@given(_bodies)
def test_parse_is_total_and_typed(body: str) -> None:
    got = parse_command(body)
    assert got is None or isinstance(got, Command | NearMiss)
    if isinstance(got, Command | NearMiss):
        assert (got.name if isinstance(got, Command) else got.suggestion) in COMMANDS


@given(
    st.text().filter(lambda t: t.strip() != ""),
    st.sampled_from(["\n", "\r\n", "\r"]),
    st.sampled_from(["/approve-destroy", "/approve-destroy dns", "/plan", "/help"]),
)
def test_command_after_other_text_is_never_a_command(prefix: str, newline: str, command: str) -> None:
    got = parse_command(prefix + newline + command)
    if isinstance(got, Command):
        # Only possible when the random prefix itself is a command line.
        assert parse_command(prefix) == got


@given(st.text(min_size=1).filter(str.strip))
def test_text_then_approve_destroy_never_approves(prefix: str) -> None:
    got = parse_command(prefix + "\n/approve-destroy")
    assert not (isinstance(got, Command) and got.name == AD) or _is_exact_approval(prefix)


@given(
    st.lists(st.from_regex(_VALID, fullmatch=True), max_size=5),
    st.sampled_from(["", "\n", "\r\n", " \n\t\n"]),
    st.sampled_from(["", "\nthanks", "\r\n> quote"]),
)
def test_valid_commands_roundtrip(projects: list[str], lead: str, trail: str) -> None:
    projects = [p for p in projects if not SHA_PREFIX.fullmatch(p)]  # those name a commit (next test)
    body = lead + " ".join(["/approve-destroy", *projects]) + trail
    assert parse_command(body) == Command(AD, tuple(dict.fromkeys(projects)))


def test_approve_destroy_can_name_the_commit_it_approves() -> None:
    assert parse_command("/approve-destroy abc1234") == Command(AD, (), "abc1234")
    assert parse_command("/approve-destroy dns 0123456789abcdef dns") == Command(AD, ("dns",), "0123456789abcdef")
    assert parse_command("/approve-destroy ABC1234") == Command(AD, ("ABC1234",))  # upper case: a project
    assert parse_command("/approve-destroy abc123") == Command(AD, ("abc123",))  # 6 digits: a project
    assert parse_command("/plan abc1234") == Command("plan", ("abc1234",))
    two = parse_command("/approve-destroy abc1234 def5678")
    assert isinstance(two, NearMiss) and "one commit" in two.reason


# Invisible characters: format (Cf), space (Zs) and line separators, controls but tab, and blank letters.
_INVISIBLE = st.characters(categories=["Cf", "Zs", "Zl", "Zp", "Cc"], exclude_characters=" \t\n\r")
_LOOKALIKE_SLASHES = st.sampled_from(["\uff0f", "\u2215", "\u2044", "\u29f8", "\u2571"])


@given(st.text(_INVISIBLE, min_size=1, max_size=3), st.sampled_from(COMMANDS), st.sampled_from(["", " dns", "\nok"]))
def test_a_command_behind_invisible_characters_is_a_near_miss_never_the_command(
    hidden: str, name: str, rest: str
) -> None:
    got = parse_command(f"{hidden}/{name}{rest}")
    assert isinstance(got, NearMiss), repr(got)
    assert got.suggestion == name and "invisible character" in got.reason and "U+" in got.reason


@given(_LOOKALIKE_SLASHES, st.sampled_from(COMMANDS), st.sampled_from(["", " dns", "\r\nok"]))
def test_a_command_with_a_look_alike_slash_is_a_near_miss_never_the_command(slash: str, name: str, rest: str) -> None:
    got = parse_command(f"{slash}{name}{rest}")
    assert isinstance(got, NearMiss), repr(got)
    assert got.suggestion == name and "is not the slash" in got.reason
