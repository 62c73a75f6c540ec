""".plangate.yml that cannot blow up: alias bombs, huge files and huge values give one short ConfigError."""

from __future__ import annotations

import itertools
import tracemalloc

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.cli_config import provider_paths
from core.config import ConfigError, parse_config
from core.config_yaml import MAX_ALIASES, MAX_EXPANDED, MAX_TEXT
from core.quoted import SHOWN, shown


def bomb(levels: int) -> str:
    """`version:` holding the billion laughs: nine strings, then `levels` lists of nine aliases of the one before."""
    names = "abcdefghijk"[: levels + 1]
    lists = [f"&a [{', '.join(['lol'] * 9)}]"]
    lists += [f"&{n} [{', '.join([f'*{p}'] * 9)}]" for p, n in itertools.pairwise(names)]
    return f"version: [{', '.join(lists)}]\n"


def _problem(text: str) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        parse_config(text)
    return info.value


def test_an_alias_bomb_is_refused_before_it_is_walked() -> None:
    text = bomb(8)
    assert len(text) < 400  # the 368-byte file: 9**9 strings once expanded
    tracemalloc.start()
    try:
        error = _problem(text)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert error.key == "(file)" and f"aliases expand to more than {MAX_EXPANDED:,}" in error.problem
    assert peak < 5 * 1024 * 1024, f"{peak:,} bytes to refuse a {len(text)}-byte file"


def test_a_small_expansion_quoted_in_an_error_stays_short() -> None:
    error = _problem(bomb(3))  # 9**4 strings under `version`: allowed, and wrong
    assert error.key == "version" and error.problem.startswith("expected 1, got list [['lol', ")
    assert len(str(error)) < 120


def test_too_many_aliases_are_refused_even_when_each_is_small() -> None:
    text = "version: 1\nmask_patterns: [&p x, " + ", ".join(["*p"] * (MAX_ALIASES + 1)) + "]\n"
    assert f"more than {MAX_ALIASES:,} aliases" in _problem(text).problem


def test_an_alias_inside_its_own_anchor_is_refused() -> None:
    assert "inside its own anchor" in _problem("version: 1\nx: &a [1, *a]\n").problem


def test_aliases_as_people_use_them_still_work() -> None:
    projects = "\n".join(f"  - {{name: p{i}, dir: p{i}, when_modified: *globs}}" for i in range(1, 500))
    globs = "['*.tf', '../modules/**', '*.tfvars']"
    text = f"version: 1\nprojects:\n  - {{name: p0, dir: p0, when_modified: &globs {globs}}}\n{projects}\n"
    config = parse_config(text)
    assert config.projects is not None and len(config.projects) == 500
    assert config.projects[499].when_modified == ("*.tf", "../modules/**", "*.tfvars")


def test_a_file_past_the_size_bound_is_refused_unread() -> None:
    error = _problem("version: 1\n" + "# padding\n" * (MAX_TEXT // 10))
    assert error.key == "(file)" and f"the limit is {MAX_TEXT:,}" in error.problem


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("version: 1\nprojects: [{name: '" + "a b" * 5000 + "', dir: a}]\n", "projects[0].name"),
        ("version: 1\napply_branch: '" + "a..b" * 5000 + "'\n", "apply_branch"),
        ("version: 1\nmask_patterns: ['" + "(" * 5000 + "']\n", "mask_patterns[0]"),
        ("version: 1\ndrift: {schedule: '" + "1 " * 5000 + "'}\n", "drift.schedule"),
        ("version: '" + "1" * 100_000 + "'\n", "version"),
        ("version: " + "1" * 5000 + "\n", "(file)"),  # past Python's int() digits: an error, not a crash
        ("version: " + ":".join(["59"] * 3000) + "\n", "version"),  # base 60: an int too long to print
        ("version: 1\nmax_projects: -" + ":".join(["59"] * 3000) + "\n", "max_projects"),
        (
            "version: 1\ndestroy_rules: [{match: [x], approvals: " + ":".join(["59"] * 3000) + "}]\n",
            "destroy_rules[0].approvals",
        ),
    ],
)
def test_values_quoted_in_errors_are_cut_short(text: str, key: str) -> None:
    error = _problem(text)
    assert error.key == key
    assert len(str(error)) < 400, str(error)


def test_an_unknown_key_of_any_length_is_named_short() -> None:
    error = _problem("version: 1\ndestroy_approvers: {'" + "k" * 1000 + "': 1}\n")
    assert error.key.startswith("destroy_approvers.kkk") and len(error.key) <= SHOWN + len("destroy_approvers.")


def test_an_unknown_key_is_named_whatever_it_holds() -> None:
    """msgspec's message ends with the path (" - at `$…`"): a key that looks like one is still named whole."""
    error = _problem("version: 1\nprojects: [{name: a, dir: a, 'x` - at `$.y': 1}]\n")
    assert error.key == "projects[0].x` - at `$.y" and error.problem.startswith("unknown key")


_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=6) | st.dictionaries(st.text(max_size=5), inner, max_size=6),
    max_leaves=40,
)


@given(_values, st.integers(min_value=2, max_value=120))
def test_shown_is_repr_when_short_and_never_longer_than_its_limit(value: object, limit: int) -> None:
    got = shown(value, limit)
    assert len(got) <= limit
    if len(repr(value)) <= limit:
        assert got == repr(value)
    else:
        assert got.endswith("…")


def test_a_cli_config_nested_too_deeply_is_unreadable_not_a_crash() -> None:
    with pytest.raises(ValueError, match="nested too deeply"):
        provider_paths("a = " + "[" * 100_000 + "]" * 100_000)
    with pytest.raises(ValueError) as info:
        provider_paths('provider_installation = [ "' + "x" * 100_000 + '" ]')
    assert len(str(info.value)) < 200
