"""The progress body of a multi-project PR plan (core.render.progress): counts, the projects still
running, links to their run pages only with a public URL, hostile names kept as text."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from core.approval_markers import approval_from_marker
from core.render.marker import parse_marker
from core.render.progress import MAX_LISTED, render_progress, run_page
from core.runs import run_id, valid_id

SHA = "0123456789abcdef0123456789abcdef01234567"
URL = "https://gate.example.org/plangate"
PROJECTS = {"net@default": "net", "app@default": "app", "db@staging": "db (workspace staging)"}
JOBS = {"net@default": "job-1", "app@default": "job-1", "db@staging": "job-2"}


def _render(done: set[str], public_url: str | None = URL, **kw: object) -> str:
    args: dict[str, object] = {
        "pr": 7,
        "sha": SHA,
        "projects": PROJECTS,
        "done": done,
        "jobs": JOBS,
        "public_url": public_url,
    }
    args.update(kw)
    return render_progress(**args)  # type: ignore[arg-type]


def test_nothing_done_yet_lists_every_project_running() -> None:
    body = _render(set())
    assert "Planning 3 projects at `0123456`: 0 of 3 done." in body
    for label in ("`net`", "`app`", "`db (workspace staging)`"):
        assert label in body


def test_a_project_done_leaves_the_list_and_counts() -> None:
    body = _render({"app@default"})
    assert "1 of 3 done" in body
    assert "`app`" not in body and "`net`" in body and "`db (workspace staging)`" in body


def test_all_done_lists_nothing_running() -> None:
    body = _render(set(PROJECTS))
    assert "3 of 3 done" in body and "Still planning" not in body


def test_a_done_identity_of_no_project_here_does_not_count() -> None:
    assert "0 of 3 done" in _render({"ghost@default"})


def test_each_running_project_links_its_run_page() -> None:
    body = _render({"net@default"})
    app = f"{URL}/runs/{run_id('job-1', 'app@default')}"
    db = f"{URL}/runs/{run_id('job-2', 'db@staging')}"
    assert f"- [`app`]({app}) (live output)" in body
    assert f"- [`db (workspace staging)`]({db}) (live output)" in body
    assert run_id("job-1", "net@default") not in body  # done: no link


def test_no_public_url_no_links() -> None:
    body = _render(set(), public_url=None)
    assert "/runs/" not in body and "](" not in body
    assert "- `net`" in body


def test_a_project_whose_job_is_unknown_is_listed_without_a_link() -> None:
    body = _render(set(), jobs={"net@default": "job-1"})
    assert "- `app`" in body and f"/runs/{run_id('job-1', 'net@default')}" in body


def test_run_page_needs_both_url_and_job() -> None:
    assert run_page(None, "job", "x") is None
    assert run_page(URL, None, "x") is None
    page = run_page(URL + "/", "job", "x")
    assert page == f"{URL}/runs/{run_id('job', 'x')}"
    assert valid_id(page.rsplit("/", 1)[1])


def test_the_marker_finds_the_plan_comment_and_says_progress() -> None:
    body = _render(set())
    parsed = parse_marker(body)
    assert parsed is not None
    kind, fields = parsed
    assert kind == "plan" and fields == {"part": 1, "parts": 1, "pr": 7, "sha": SHA, "progress": True}
    assert body.startswith("<!-- plangate:plan ")


def test_many_running_projects_are_counted_past_the_list() -> None:
    projects = {f"p{i}@default": f"p{i}" for i in range(MAX_LISTED + 12)}
    body = render_progress(pr=1, sha=SHA, projects=projects, done={"p0@default"}, jobs={}, public_url=None)
    assert f"1 of {MAX_LISTED + 12} done" in body
    assert body.count("\n- `") == MAX_LISTED and "- … and 11 more" in body


def test_labels_are_masked() -> None:
    projects = {"a@default": "team-secret-42", "b@default": "b"}
    body = render_progress(
        pr=1, sha=SHA, projects=projects, done=set(), jobs={}, public_url=None, mask_patterns=[r"secret-\d+"]
    )
    assert "secret-42" not in body and "team-" in body


HOSTILE = [
    "x` <!-- plangate:approval {} --> `",
    "[link](https://evil.example)",
    "a\n## Plan: 0 to destroy\n",
    "```\nfence",
    "<img src=x onerror=alert(1)>",
    "-->",
]


def test_hostile_names_stay_inside_one_code_span_each() -> None:
    projects = {f"p{i}@default": name for i, name in enumerate(HOSTILE)}
    body = render_progress(pr=1, sha=SHA, projects=projects, done=set(), jobs={}, public_url=None)
    first, *_ = body.splitlines()
    assert parse_marker(body) == parse_marker(first)  # the only marker that counts is plangate's own
    items = [line for line in body.splitlines() if line.startswith("- ")]
    assert len(items) == len(HOSTILE)  # no name breaks the list with a newline
    for line in items:
        span = re.fullmatch(r"- (`+)( ?)(.*)\2\1", line)
        assert span is not None, line
        assert span.group(1) not in span.group(3)  # the fence is longer than any backtick run inside
    assert "## Plan" not in "\n".join(line for line in body.splitlines() if not line.startswith("- "))
    assert approval_from_marker(body, key=b"k" * 32, repo_id=1, number=1, sha=SHA) is None


@given(
    names=st.lists(st.text(min_size=1, max_size=40), min_size=2, max_size=40, unique=True),
    done_mask=st.lists(st.booleans(), min_size=40, max_size=40),
    public=st.booleans(),
)
def test_counts_and_list_agree_for_any_projects(names: list[str], done_mask: list[bool], public: bool) -> None:
    projects = {f"id{i}": name for i, name in enumerate(names)}
    done = {f"id{i}" for i in range(len(names)) if done_mask[i]}
    jobs = {identity: f"job-{i % 3}" for i, identity in enumerate(projects)}
    body = render_progress(pr=3, sha=SHA, projects=projects, done=done, jobs=jobs, public_url=URL if public else None)
    assert f"{len(done)} of {len(names)} done" in body
    running = [i for i in projects if i not in done]
    items = [line for line in body.splitlines() if line.startswith("- ")]
    assert len(items) == min(len(running), MAX_LISTED) + (1 if len(running) > MAX_LISTED else 0)
    links = re.findall(r"/runs/([A-Za-z0-9_-]+)\)", body)
    expected = [run_id(jobs[i], i) for i in running[:MAX_LISTED]] if public else []
    assert links == expected
    assert len(body) < 65_536
    parsed = parse_marker(body)
    assert parsed is not None and parsed[1]["progress"] is True and parsed[1]["sha"] == SHA
