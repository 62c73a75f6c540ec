"""The project limit: the server's setting, lowered (never raised) by the default branch's `max_projects`."""

from __future__ import annotations

import pytest

from core.config import ConfigError, RepoConfig, parse_config
from core.project_limit import TooMany, over_limit
from core.render.plan import parse_marker, render_too_many_projects


def test_max_projects_is_read_and_checked() -> None:
    assert parse_config("version: 1\n").max_projects is None
    assert parse_config("version: 1\nmax_projects: 20\n").max_projects == 20
    for bad, fragment in (
        ("0", "expected 1 or more"),
        ("-3", "expected 1 or more"),
        ("many", "a number"),
        ("true", ""),
    ):
        with pytest.raises(ConfigError) as info:
            parse_config(f"version: 1\nmax_projects: {bad}\n")
        assert info.value.key == "max_projects" and fragment in info.value.problem


def test_the_server_setting_is_the_limit_unless_the_repository_asks_for_less() -> None:
    assert over_limit(500, 500, RepoConfig()) is None
    assert over_limit(501, 500, RepoConfig()) == TooMany(501, 500, "this plangate's `PLANGATE_MAX_PROJECTS`")
    lowered = over_limit(21, 500, RepoConfig(max_projects=20))
    assert lowered is not None and (lowered.limit, lowered.count) == (20, 21) and "`max_projects`" in lowered.by
    assert over_limit(20, 500, RepoConfig(max_projects=20)) is None
    raised = over_limit(501, 500, RepoConfig(max_projects=10_000))  # a repository cannot raise it
    assert raised is not None and raised.limit == 500 and "PLANGATE_MAX_PROJECTS" in raised.by


def test_the_refusal_names_the_count_and_the_limit() -> None:
    too_many = TooMany(10_000, 500, "this plangate's `PLANGATE_MAX_PROJECTS`")
    body = render_too_many_projects(too_many)
    assert parse_marker(body) == ("too-many-projects", {"count": 10_000, "limit": 500})
    assert "affects 10,000 Terraform projects; plangate plans at most 500 for one change" in body
    assert "PLANGATE_MAX_PROJECTS" in body and "Nothing was planned or applied" in body
    assert too_many.status == "10,000 projects affected; the limit is 500" and len(too_many.status) <= 140
