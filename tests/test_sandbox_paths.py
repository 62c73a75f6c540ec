"""Which host paths each phase's sandbox shows, and how (pure): a PR's plan writes none unless told to."""

from __future__ import annotations

from pathlib import Path

from core.sandbox_paths import Grant, GrantPhase, SandboxPaths, merged, parse_grants


def _shown(paths: SandboxPaths, phase: GrantPhase) -> list[str]:
    return [f"{g.path}:{'rw' if g.writable else 'ro'}" for g in paths.grants(phase)]


def test_the_common_settings_rw_is_read_only_to_plans() -> None:
    paths = SandboxPaths(common=parse_grants("/srv/state:rw, /etc/aws"))
    assert _shown(paths, "plan") == ["/srv/state:ro", "/etc/aws:ro"]
    assert _shown(paths, "apply") == ["/srv/state:rw", "/etc/aws:ro"]


def test_a_plan_writes_a_path_only_when_the_plan_setting_says_rw() -> None:
    paths = SandboxPaths(
        common=parse_grants("/srv/state:rw"),
        plan=parse_grants("/srv/state:rw, /srv/cache"),
        apply=parse_grants("/srv/deploy:rw"),
    )
    assert _shown(paths, "plan") == ["/srv/state:rw", "/srv/cache:ro"]
    assert _shown(paths, "apply") == ["/srv/state:rw", "/srv/deploy:rw"]  # nothing of _PLAN
    read_only_for_plans = SandboxPaths(plan=parse_grants("/srv/state"), apply=parse_grants("/srv/state:rw"))
    assert _shown(read_only_for_plans, "plan") == ["/srv/state:ro"]
    assert _shown(read_only_for_plans, "apply") == ["/srv/state:rw"]


def test_the_phase_settings_add_to_one_phase_only() -> None:
    paths = SandboxPaths(plan=parse_grants("/p:rw"), apply=parse_grants("/a"))
    assert _shown(paths, "plan") == ["/p:rw"] and _shown(paths, "apply") == ["/a:ro"]
    assert _shown(SandboxPaths(), "plan") == _shown(SandboxPaths(), "apply") == []


def test_nested_grants_are_mounted_parents_first_so_the_nearer_one_decides() -> None:
    # /srv writable to applies, read-only to plans; /srv/state read-only under it even for applies.
    paths = SandboxPaths(common=parse_grants("/srv/state, /srv:rw"), plan=parse_grants("/srv/state/tmp:rw"))
    assert _shown(paths, "plan") == ["/srv:ro", "/srv/state:ro", "/srv/state/tmp:rw"]
    assert _shown(paths, "apply") == ["/srv:rw", "/srv/state:ro"]


def test_every_path_is_checked_at_start_up_writable_if_a_phase_may_write_it() -> None:
    paths = SandboxPaths(
        common=parse_grants("/etc/aws"), plan=parse_grants("/srv/state"), apply=parse_grants("/srv/state:rw")
    )
    assert paths.every == (Grant(Path("/etc/aws")), Grant(Path("/srv/state"), writable=True))
    assert merged([Grant(Path("/x")), Grant(Path("/x"))]) == (Grant(Path("/x")),)


def test_an_error_about_a_path_names_the_setting_that_grants_it() -> None:
    paths = SandboxPaths(common=parse_grants("/a"), plan=parse_grants("/p"), apply=parse_grants("/q"))
    assert paths.setting_of(Path("/a")) == "PLANGATE_SANDBOX_PATHS"
    assert paths.setting_of(Path("/p")) == "PLANGATE_SANDBOX_PATHS_PLAN"
    assert paths.setting_of(Path("/q")) == "PLANGATE_SANDBOX_PATHS_APPLY"
