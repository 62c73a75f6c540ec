"""The status page at a glance, pure: gate words, which PRs are open, the last apply per project, the timeline,
links to run pages only for well-formed run ids, everything grouped per repository from one pass."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.gate_states import APPROVED, BLOCKED, FAILED, NO_DESTROYS, UNKNOWN, WAITING, Pulls, Word, gate_word
from bot.run_links import run_path
from bot.status_rows import TIMELINE, outcome, repositories
from core.render.status import held_by_others

NOW = 1_700_000_000.0
A, B, C = "a" * 40, "b" * 40, "c" * 40


def entry(kind: str, number: int | None = 7, sha: str = A, **fields: Any) -> dict[str, Any]:
    return {"at": NOW - 60, "kind": kind, "repo": "acme/infra", "number": number, "sha": sha, **fields}


WAITS = "1 to destroy — comment /approve-destroy"


def plan(sha: str = A, gate: str = "failure", description: str = WAITS, **fields: Any) -> dict[str, Any]:
    fields.setdefault("project", "infra")
    return entry("plan", sha=sha, gate=gate, gate_description=description, **fields)


def open_numbers(runs: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    pulls = Pulls()
    for position, run in enumerate(runs):
        pulls.see(position, run)
    return [(p.repo, p.number) for p in pulls.open()]


# Gate words: the descriptions plangate posts (core.render.status, core.render.replies, core.render.lost).
WORDS = {
    ("success", "No destroys"): Word(NO_DESTROYS, "success"),
    ("success", "1 destroy approved by @bob"): Word(APPROVED, "success"),
    ("success", "2 destroys and 1 gated change approved by @bob and @carol"): Word(APPROVED, "success"),
    ("failure", "1 to destroy — comment /approve-destroy"): Word(WAITING, "pending"),
    ("failure", "2 to destroy, 1 gated change (1 approved) — comment /approve-destroy"): Word(WAITING, "pending"),
    ("failure", held_by_others([8])[1]): Word(WAITING, "pending"),
    ("failure", "1 to destroy; 1 no approval can unlock (destroy_rules never)"): Word(BLOCKED, "failure"),
    ("failure", "Cannot check destroys: 1 plans failed: infra"): Word(FAILED, "failure"),
    ("failure", "Cannot check destroys: 1 plans failed: /approve-destroy"): Word(FAILED, "failure"),
    ("failure", "something plangate does not say yet"): Word(BLOCKED, "failure"),
    ("failure", ""): Word(BLOCKED, "failure"),
    ("error", "No verdict: the plan was lost. Comment /plan to run it again"): Word(FAILED, "failure"),
    ("pending", "Planning 2 projects…"): Word(UNKNOWN, "unknown"),
    ("", ""): Word(UNKNOWN, "unknown"),
    ("SUCCESS", "No destroys"): Word(UNKNOWN, "unknown"),
}


def test_every_gate_state_has_its_word() -> None:
    for (state, description), word in WORDS.items():
        assert gate_word(state, description) == word, (state, description)


@given(st.text(), st.text())
def test_only_success_is_green(state: str, description: str) -> None:
    word = gate_word(state, description)
    assert (word.tone == "success") == (state == "success")
    assert word.word in (WAITING, APPROVED, NO_DESTROYS, BLOCKED, FAILED, UNKNOWN)


# Open PRs.


def test_a_planned_pr_is_open_until_it_closes() -> None:
    assert open_numbers([plan()]) == [("acme/infra", 7)]
    assert open_numbers([entry("closed", result="merged"), plan()]) == []
    assert open_numbers([entry("closed", sha=B, result="closed"), plan(sha=A)]) == []  # closed after a push


def test_a_plan_that_finishes_after_the_close_at_that_commit_does_not_reopen_it() -> None:
    assert open_numbers([plan(sha=A), entry("closed", sha=A, result="closed"), plan(sha=A)]) == []


def test_a_reopened_pr_planned_at_a_new_commit_is_open_again() -> None:
    assert open_numbers([plan(sha=B), entry("closed", sha=A), plan(sha=A)]) == [("acme/infra", 7)]


def test_a_pr_without_a_plan_or_an_approval_is_not_listed() -> None:
    runs = [entry("apply", result="applied", project="infra"), entry("drift", number=9), entry("plan", number=None)]
    assert open_numbers(runs) == []


def test_prs_are_told_apart_by_repository_and_number_and_listed_most_recent_first() -> None:
    runs = [plan(number=8), {**plan(), "repo": "acme/other"}, plan(), entry("closed", number=8, sha=C)]
    assert open_numbers(runs) == [("acme/infra", 8), ("acme/other", 7), ("acme/infra", 7)]


def test_the_gate_shown_is_the_newest_at_the_head() -> None:
    approved = entry("approval", gate="success", gate_description="1 destroy approved by @bob", project="infra")
    stale = entry("approval", sha=B, gate="success", gate_description="1 destroy approved by @bob")
    (repo,) = repositories([approved, plan(project="infra"), plan(project="dns")], NOW)
    (pull,) = repo.pulls
    assert (pull.gate.state, pull.gate.css, pull.projects, pull.sha) == (APPROVED, "success", "dns, infra", A)
    # An approval recorded after a plan at a newer head is of the old head: the new head still waits.
    (repo,) = repositories([stale, plan(sha=A)], NOW)
    assert [(p.sha, p.gate.state) for p in repo.pulls] == [(A, WAITING)]
    # A re-plan after the approval (a /plan, a new destroy) shows the re-plan's gate.
    (repo,) = repositories([plan(), approved, plan()], NOW)
    assert repo.pulls[0].gate.state == WAITING


def test_the_pr_links_its_newest_run_at_the_head_that_names_a_valid_one() -> None:
    runs = [plan(run="../../etc"), plan(run="newest_id-1"), plan(run="older"), plan(sha=B, run="old-head")]
    (repo,) = repositories(runs, NOW)
    assert repo.pulls[0].run == "/runs/newest_id-1"
    (repo,) = repositories([plan(), plan(sha=B, run="old-head")], NOW)
    assert repo.pulls[0].run == ""


# Last apply per project, drift, timeline.


def test_last_apply_per_project_green_only_when_applied() -> None:
    runs = [
        entry("apply", project="app", result="waiting on net (failed)", gate="failure", run="r3"),
        entry("apply", project="net", result="applied", gate="success", sha=B),
        entry("apply", project="app", result="applied", gate="success", run="r1"),
        entry("apply", project="db", result="applied", gate="failure"),  # the result decides, not the gate
        entry("apply", project="dns", result=None, gate="success"),
    ]
    (repo,) = repositories(runs, NOW)
    shown = [(a.project, a.result.state, a.result.css, a.run, a.sha) for a in repo.applies]
    assert shown == [
        ("app", "waiting on net (failed)", "failure", "/runs/r3", A),
        ("db", "applied", "success", "", A),
        ("dns", "no result", "failure", "", A),
        ("net", "applied", "success", "", B),
    ]


def test_drift_per_project_is_the_newest_check() -> None:
    runs = [
        entry("drift", number=None, project="app", gate="success", result="clean", run="d2"),
        entry("drift", number=12, project="app", gate="failure", result="drift"),
        entry("drift", number=13, project="db", gate="failure", result="drift"),
    ]
    (repo,) = repositories(runs, NOW)
    assert [(d.project, d.result.state, d.result.css, d.issue, d.run) for d in repo.drift] == [
        ("app", "clean", "success", "", "/runs/d2"),
        ("db", "drift", "failure", "#13", ""),
    ]


def test_the_timeline_holds_the_last_runs_of_each_repository_with_a_closed_pr_as_a_plain_event() -> None:
    runs = [entry("closed", result="merged")] + [plan(run=f"r{i}") for i in range(TIMELINE + 5)]
    (repo,) = repositories(runs, NOW)
    assert len(repo.timeline) == TIMELINE
    first, second = repo.timeline[:2]
    assert (first.kind, first.number, first.outcome.state, first.outcome.css, first.run) == (
        "closed",
        "#7",
        "merged",
        "event",
        "",
    )
    assert (second.outcome.state, second.outcome.css, second.run) == (WAITING, "pending", "/runs/r0")


def test_outcomes_of_every_kind() -> None:
    assert outcome(entry("accept-drift", gate="success", result="accepted")).state == "accepted"
    assert outcome(entry("accept-drift", gate="failure", result="failed")).css == "failure"
    assert outcome(entry("closed")).state == "closed"
    assert outcome(entry("weird", gate="<b>")).css == "unknown"
    assert outcome({}).state == "—"


def test_repositories_are_sorted_and_each_shows_only_its_own_runs() -> None:
    runs = [{**plan(), "repo": "zeta/z"}, plan(), {**entry("apply", project="p", result="applied"), "repo": "beta/b"}]
    names = [(r.name, len(r.pulls), len(r.applies), len(r.timeline)) for r in repositories(runs, NOW)]
    assert names == [("acme/infra", 1, 0, 1), ("beta/b", 0, 1, 1), ("zeta/z", 1, 0, 1)]


def test_run_links_only_for_run_ids() -> None:
    assert run_path("AbC_-09" * 3) == "/runs/" + "AbC_-09" * 3
    assert run_path("x" * 64) == "/runs/" + "x" * 64
    for bad in (
        "",
        "x" * 65,
        "../x",
        "a/b",
        "//evil.example",
        "javascript:alert(1)",
        "a b",
        "a\n",
        "é",
        None,
        7,
        ["a"],
    ):
        assert run_path(bad) == "", bad


# Properties over any run log.

REPOS = ("acme/infra", "acme/other")
KINDS = ("plan", "approval", "closed", "apply", "drift", "accept-drift", "odd")
runs_strategy = st.lists(
    st.fixed_dictionaries(
        {
            "kind": st.sampled_from(KINDS),
            "repo": st.sampled_from(REPOS),
            "number": st.sampled_from((1, 2, 3, None)),
            "sha": st.sampled_from((A, B, C)),
            "project": st.sampled_from(("app", "db", "")),
            "gate": st.sampled_from(("success", "failure", "error", "pending", "")),
            "gate_description": st.sampled_from(("No destroys", "1 to destroy — comment /approve-destroy", "x")),
            "result": st.sampled_from(("applied", "failed", "merged", "closed", "")),
            "run": st.one_of(st.none(), st.sampled_from(("ok-1", "ok_2", "../x", "a b", "")), st.text(max_size=5)),
        }
    ),
    max_size=40,
)


def _pr_entries(runs: list[dict[str, Any]], repo: str, number: Any) -> list[dict[str, Any]]:
    kinds = ("plan", "approval", "closed")
    return [r for r in runs if r["repo"] == repo and r["number"] == number and r["kind"] in kinds]


@settings(max_examples=300)
@given(runs_strategy)
def test_a_closed_pr_never_shows_as_open(runs: list[dict[str, Any]]) -> None:
    """Closed last, or closed at the commit of its newest plan: never open. Planned and never closed: open."""
    shown = {(view.name, pull.number) for view in repositories(runs, NOW) for pull in view.pulls}
    for repo in REPOS:
        for number in (1, 2, 3):
            mine = _pr_entries(runs, repo, number)
            planned = [r for r in mine if r["kind"] != "closed"]
            closed = [r for r in mine if r["kind"] == "closed"]
            head = next((r for r in planned if r["kind"] == "plan"), planned[0] if planned else None)
            if not planned or mine[0]["kind"] == "closed" or (head and head["sha"] in {r["sha"] for r in closed}):
                assert (repo, f"#{number}") not in shown
            if planned and not closed:
                assert (repo, f"#{number}") in shown
    assert all(number != "" for _, number in shown)


@settings(max_examples=300)
@given(runs_strategy)
def test_each_project_has_at_most_one_last_apply_and_it_is_the_newest(runs: list[dict[str, Any]]) -> None:
    for view in repositories(runs, NOW):
        projects = [a.project for a in view.applies]
        assert len(projects) == len(set(projects))
        applies = [r for r in runs if r["repo"] == view.name and r["kind"] == "apply"]
        assert set(projects) == {r["project"] for r in applies}
        for row in view.applies:
            newest = next(r for r in applies if r["project"] == row.project)
            assert row.sha == newest["sha"] and row.run == run_path(newest["run"])
            assert (row.result.css == "success") == (newest["result"] == "applied")


@settings(max_examples=300)
@given(runs_strategy)
def test_timelines_are_each_repositorys_newest_runs_and_links_are_only_to_run_ids(runs: list[dict[str, Any]]) -> None:
    views = repositories(runs, NOW)
    assert [v.name for v in views] == sorted({r["repo"] for r in runs})
    for view in views:
        mine = [r for r in runs if r["repo"] == view.name][:TIMELINE]
        assert [(e.kind, e.run) for e in view.timeline] == [(r["kind"], run_path(r["run"])) for r in mine]
        links = [e.run for e in view.timeline] + [p.run for p in view.pulls] + [a.run for a in view.applies]
        links += [d.run for d in view.drift]
        for path in links:
            assert path == "" or run_path(path.removeprefix("/runs/")) == path
        for pull in view.pulls:
            assert pull.gate.css != "success" or pull.gate.state in (APPROVED, NO_DESTROYS)
