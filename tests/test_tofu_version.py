"""core/tofu_version.py: the release a `version -json` answer names, and whether that tofu locks its cache."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.tofu_version import CONCURRENT_CACHE_SINCE, Release, parse_version_json, tofu_locks_its_cache


def _answer(version: object) -> str:
    """What `tofu version -json` prints (1.10.5's fields), naming `version`."""
    return json.dumps({"terraform_version": version, "platform": "linux_amd64", "provider_selections": {}})


@pytest.mark.parametrize(
    ("version", "locks"),
    [
        ("1.10.5", True),
        ("1.10.10", True),
        ("1.11.0", True),
        ("1.11.0-alpha1", True),  # after 1.10.5, pre-release or not
        ("2.0.0", True),
        ("1.10.5+build.7", True),
        ("1.10.5-rc1", False),  # before 1.10.5
        ("1.10.4", False),  # locks, but could fail an init on a contended lock (opentofu#3089)
        ("1.10.0", False),
        ("1.9.1", False),
        ("0.99.99", False),
    ],
)
def test_from_1_10_5_tofu_locks_its_cache(version: str, locks: bool) -> None:
    assert tofu_locks_its_cache(_answer(version)) is locks
    assert tofu_locks_its_cache(_answer(version).encode()) is locks


@pytest.mark.parametrize(
    "answer",
    [
        "",
        "garbage",
        "OpenTofu v1.10.5\non linux_amd64",  # plain `tofu version`
        "[]",
        '"1.10.5"',
        "{}",
        '{"version": "1.10.5"}',
        _answer(None),
        _answer(1.11),
        _answer(["1.10.5"]),
        _answer("v1.10.5"),
        _answer("1.10"),
        _answer("1.10.5.1"),
        _answer("01.10.5"),
        _answer(" 1.10.5"),
        _answer("1.10.5\n"),
        _answer("1.١٠.5"),  # digits of another script
        _answer("1.10.5-"),
        "[" * 100_000,  # deeper than the parser goes
    ],
)
def test_anything_else_is_not_known_to_lock(answer: str) -> None:
    assert parse_version_json(answer) is None
    assert tofu_locks_its_cache(answer) is False


def test_bytes_that_are_not_text_are_not_known_to_lock() -> None:
    assert tofu_locks_its_cache(b'{"terraform_version": "\xff1.10.5"}') is False


def test_the_release_and_its_pre_release_mark_are_read() -> None:
    assert parse_version_json(_answer("1.10.5-rc1+x")) == Release((1, 10, 5), prerelease=True)
    assert parse_version_json(_answer("12.0.3")) == Release((12, 0, 3), prerelease=False)


versions = st.tuples(*(st.integers(min_value=0, max_value=10**6) for _ in range(3)))


@given(versions, st.booleans())
def test_a_release_locks_exactly_when_it_comes_at_or_after_1_10_5(core: tuple[int, int, int], pre: bool) -> None:
    written = ".".join(map(str, core)) + ("-beta2" if pre else "")
    assert parse_version_json(_answer(written)) == Release(core, pre)
    after = core > CONCURRENT_CACHE_SINCE or (core == CONCURRENT_CACHE_SINCE and not pre)
    assert tofu_locks_its_cache(_answer(written)) is after


@given(st.binary(max_size=200) | st.text(max_size=200))
def test_no_answer_breaks_the_reading(answer: bytes | str) -> None:
    assert tofu_locks_its_cache(answer) in (True, False)
