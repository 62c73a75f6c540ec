"""Drift schedules: due targets, jitter and per-repository targets (workers/drift_schedule.py)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

import pytest
from croniter import croniter
from hypothesis import given
from hypothesis import strategies as st

from core.config import parse_config
from core.cron import is_valid_schedule, validate_schedule
from core.drift_schedule import (
    MAX_SPREAD,
    DriftTarget,
    delays,
    due,
    jitter_seconds,
    spread_for,
    targets_for,
)

REPO = dict(installation_id=7, repo_id=42, repo="o/r", clone_url="https://github.com/o/r.git", default_branch="main")


def target(
    schedule: str = "* * * * *", project: str | None = "dns", installation: int = 7, repo_id: int = 42
) -> DriftTarget:
    return DriftTarget(installation, repo_id, f"o/r{repo_id}", "https://x/o/r.git", "main", project, schedule)


def test_target_round_trips_through_a_plain_dict() -> None:
    for t in (target(), target(project=None)):
        data = t.to_plain()
        assert data == {
            "installation_id": 7,
            "repo_id": 42,
            "repo": "o/r42",
            "clone_url": "https://x/o/r.git",
            "default_branch": "main",
            "project": t.project,
            "schedule": "* * * * *",
        }
        assert DriftTarget.from_plain(data) == t


@pytest.mark.parametrize(
    ("key", "value"),
    [("installation_id", "7"), ("repo_id", True), ("repo", ""), ("schedule", None), ("project", 3), ("project", "")],
)
def test_from_plain_names_the_bad_field(key: str, value: object) -> None:
    data = target().to_plain() | {key: value}
    with pytest.raises(ValueError, match=re.escape(f"DriftTarget.{key}:")):
        DriftTarget.from_plain(data)


def test_from_plain_names_a_missing_field() -> None:
    data = target().to_plain()
    del data["clone_url"]
    with pytest.raises(ValueError, match=re.escape("DriftTarget.clone_url:")):
        DriftTarget.from_plain(data)


@pytest.mark.parametrize(
    "expr", ["*/15 * * * *", " 0 3 * * 1-5 ", "0 0 * * MON-FRI", "@hourly", "@DAILY", "5 4 1 */2 *"]
)
def test_valid_schedules_are_returned_stripped(expr: str) -> None:
    assert validate_schedule(expr, "PLANGATE_DRIFT_SCHEDULE") == expr.strip()
    assert is_valid_schedule(expr)


@pytest.mark.parametrize(
    "expr",
    ["61 * * * *", "", "   ", "* * * *", "* * * * * *", "0 * * * * 2030", "@reboot", "@every 5m", "H * * * *", "daily"],
)
def test_invalid_schedules_name_the_setting_and_expression(expr: str) -> None:
    with pytest.raises(ValueError) as info:
        validate_schedule(expr, "PLANGATE_DRIFT_SCHEDULE")
    assert str(info.value).startswith(f"PLANGATE_DRIFT_SCHEDULE: invalid cron expression {expr!r}")
    assert not is_valid_schedule(expr)


@given(minute=st.integers(60, 999), name=st.from_regex(r"projects\[[0-9]\]\.drift\.schedule", fullmatch=True))
def test_out_of_range_minutes_are_rejected_with_the_name(minute: int, name: str) -> None:
    with pytest.raises(ValueError, match="^" + re.escape(f"{name}: invalid cron expression")):
        validate_schedule(f"{minute} * * * *", name)


AT = datetime(2024, 5, 6, 3, 0, tzinfo=UTC)  # a Monday, 03:00 UTC


@pytest.mark.parametrize(
    ("expr", "at", "expected"),
    [
        ("* * * * *", AT, True),
        ("0 3 * * *", AT, True),
        ("0 3 * * *", AT + timedelta(minutes=1), False),
        ("*/15 * * * *", AT + timedelta(minutes=45), True),
        ("*/15 * * * *", AT + timedelta(minutes=46), False),
        ("0 3 * * MON", AT, True),
        ("0 3 * * TUE", AT, False),
        ("@hourly", AT, True),
        ("@hourly", AT + timedelta(minutes=30), False),
        ("@daily", AT, False),
        ("0 3 * * *", AT + timedelta(seconds=59, microseconds=5), True),  # seconds are ignored
        ("0 3 * * *", datetime(2024, 5, 6, 3, 0), True),  # naive: already UTC
        ("0 3 * * *", datetime(2024, 5, 6, 5, 0, tzinfo=timezone(timedelta(hours=2))), True),  # converted to UTC
        ("0 5 * * *", datetime(2024, 5, 6, 5, 0, tzinfo=timezone(timedelta(hours=2))), False),
        ("61 * * * *", AT, False),  # invalid never fires, never raises
        ("* * * * * 30", AT, False),  # a seconds field is refused
    ],
)
def test_due_table(expr: str, at: datetime, expected: bool) -> None:
    t = target(expr)
    assert due([t], at) == ([t] if expected else [])


def test_due_keeps_input_order_and_duplicates_of_one_expression() -> None:
    ts = [target("0 * * * *", "a"), target("5 * * * *", "b"), target("0 * * * *", "c"), target("@hourly", None)]
    assert due(ts, AT) == [ts[0], ts[2], ts[3]]
    assert due(iter(ts), AT + timedelta(minutes=5)) == [ts[1]]


cron_field = st.one_of(
    st.just("*"),
    st.integers(0, 5).map(str),
    st.integers(1, 5).map(lambda n: f"*/{n}"),
    st.tuples(st.integers(0, 3), st.integers(3, 6)).map(lambda r: f"{r[0]}-{r[1]}"),
)
minutes_of_2024 = st.integers(0, 366 * 24 * 60 - 1).map(
    lambda n: datetime(2024, 1, 1, tzinfo=UTC) + timedelta(minutes=n)
)


@given(
    fields=st.tuples(
        st.one_of(cron_field, st.integers(0, 59).map(str)),
        st.one_of(cron_field, st.integers(0, 23).map(str)),
        st.one_of(st.just("*"), st.integers(1, 28).map(str)),
        st.one_of(st.just("*"), st.integers(1, 12).map(str)),
        st.one_of(st.just("*"), st.integers(0, 6).map(str)),
    ),
    at=minutes_of_2024,
)
def test_due_agrees_with_croniter(fields: tuple[str, ...], at: datetime) -> None:
    expr = " ".join(fields)
    assert is_valid_schedule(expr)
    assert bool(due([target(expr)], at)) == croniter.match(expr, at)


@given(
    installation=st.integers(1, 10**12),
    repo_id=st.integers(1, 10**12),
    project=st.one_of(st.none(), st.text(min_size=1, max_size=40)),
    spread=st.integers(-5, 10**6),
)
def test_jitter_is_stable_and_within_range(installation: int, repo_id: int, project: str | None, spread: int) -> None:
    t = target(project=project, installation=installation, repo_id=repo_id)
    j = jitter_seconds(t, spread)
    assert j == jitter_seconds(DriftTarget.from_plain(t.to_plain()), spread)
    assert j == 0 if spread <= 0 else 0 <= j < spread


def test_jitter_ignores_schedule_and_names_but_not_identity() -> None:
    a = target("0 * * * *", "dns")
    renamed = DriftTarget(7, 42, "o/renamed", "https://y/o/renamed.git", "trunk", "dns", "@daily")
    assert jitter_seconds(a, 10**9) == jitter_seconds(renamed, 10**9)
    others = [target(project="net"), target(project=None), target(installation=8), target(repo_id=43)]
    assert all(jitter_seconds(o, 10**9) != jitter_seconds(a, 10**9) for o in others)


def test_jitter_spreads_an_installation_over_the_window() -> None:
    ts = [target(project=f"p{i}") for i in range(600)]
    spread = spread_for(len(ts))
    buckets = {jitter_seconds(t, spread) * 10 // spread for t in ts}
    assert buckets == set(range(10))  # every tenth of the window gets some checks


@pytest.mark.parametrize(("n", "spread"), [(-3, 0), (0, 0), (1, 2), (10, 20), (900, MAX_SPREAD), (10**6, MAX_SPREAD)])
def test_spread_for(n: int, spread: int) -> None:
    assert spread_for(n) == spread


def test_delays_size_the_window_per_installation() -> None:
    small = target(project="only", installation=1)
    big = [target(project=f"p{i}", installation=2) for i in range(100)]
    mixed = delays([small, *big])
    assert [t for t, _ in mixed] == [small, *big]
    assert mixed[1:] == delays(big)  # another installation's checks do not widen this window
    assert all(0 <= d < spread_for(100) for _, d in mixed[1:])
    assert max(d for _, d in mixed[1:]) >= spread_for(1)
    assert 0 <= mixed[0][1] < spread_for(1)


def test_delays_of_a_single_check_stay_under_its_window() -> None:
    for i in range(20):
        [(_, delay)] = delays([target(project=f"x{i}", installation=i)])
        assert 0 <= delay < spread_for(1)


CONFIGURED = """
version: 1
drift: {schedule: "0 * * * *"}
projects:
  - {name: dns, dir: infra/dns}
  - {name: net, dir: infra/net, drift: {schedule: "*/10 * * * *"}}
"""
ONLY_ONE = """
version: 1
projects:
  - {name: dns, dir: infra/dns}
  - {name: net, dir: infra/net, drift: {schedule: "@daily"}}
"""
LISTED_NO_SCHEDULE = """
version: 1
projects:
  - {name: dns, dir: infra/dns}
"""
DISCOVERED = """
version: 1
drift: {schedule: "30 2 * * *"}
"""


@pytest.mark.parametrize(
    ("text", "server_default", "expected"),
    [
        (CONFIGURED, None, [("dns", "0 * * * *"), ("net", "*/10 * * * *")]),
        (CONFIGURED, "@hourly", [("dns", "0 * * * *"), ("net", "*/10 * * * *")]),
        (ONLY_ONE, "@hourly", [("net", "@daily")]),  # configured somewhere: the default does not fill gaps
        (LISTED_NO_SCHEDULE, None, []),
        (LISTED_NO_SCHEDULE, "@hourly", [(None, "@hourly")]),
        (DISCOVERED, None, [(None, "30 2 * * *")]),
        (DISCOVERED, "@hourly", [(None, "30 2 * * *")]),
        (None, None, []),  # default: off
        (None, "0 4 * * *", [(None, "0 4 * * *")]),
        ("version: 1\n", "", []),
    ],
)
def test_targets_for(text: str | None, server_default: str | None, expected: list[tuple[str | None, str]]) -> None:
    got = targets_for(parse_config(text), server_default=server_default, **REPO)  # type: ignore[arg-type]
    assert [(t.project, t.schedule) for t in got] == expected
    assert all((t.installation_id, t.repo_id, t.repo, t.default_branch) == (7, 42, "o/r", "main") for t in got)
    assert all(t.clone_url == "https://github.com/o/r.git" for t in got)
