"""The status page: the pure renderer (escaping, empty states, gate derivation) and the route on real Redis."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import jinja2
import redis
from hypothesis import given
from hypothesis import strategies as st
from jinja2 import nodes
from markupsafe import escape
from rq import Queue, Worker
from starlette.applications import Starlette
from starlette.testclient import TestClient

from bot import status_page, status_reads
from bot.status_auth import EVERYTHING, Access
from bot.status_page import render_status_page
from bot.status_reads import read_failed
from core.contract import COMMANDS_QUEUE, PLANS_QUEUE, Jobs
from plumbing import settings
from plumbing.runlog import KEEP, RUNS_KEY, recent_runs, record_run
from standin.local_redis import free_port

ROOT = Path(__file__).resolve().parent.parent
TEMPLATES = ROOT / "bot" / "templates"
NOW = 1_700_000_000.0
SHA = "0123456789abcdef0123456789abcdef01234567"
ALLOWED_TAGS = {
    "html", "head", "meta", "title", "style", "body", "h1", "h2", "p", "table", "thead", "tbody",
    "tr", "th", "td", "code", "span", "br", "a", "strong", "h3",
}  # fmt: skip
CLASSES = {
    "muted",
    "repo",
    "state-success",
    "state-failure",
    "state-pending",
    "state-error",
    "state-unknown",
    "state-event",
}


def run(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "at": NOW - 30,
        "kind": "plan",
        "repo": "acme/infra",
        "number": 7,
        "project": "infra",
        "sha": SHA,
        "summary": "0 to add, 0 to change, 1 to destroy",
        "gate": "failure",
        "gate_description": "1 to destroy — comment /approve-destroy",
        "url": "https://github.com/acme/infra/pull/7#issuecomment-1",
    }
    return {**base, **fields}


class Parsed(HTMLParser):
    """What a browser builds: tags with attributes, and the text a person reads."""

    def __init__(self, page: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.feed(page)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def joined(self) -> str:
        return "".join(self.text)

    def attrs(self, tag: str, name: str) -> list[str | None]:
        return [attrs.get(name) for seen, attrs in self.tags if seen == tag]


def test_empty_state_says_so() -> None:
    page = render_status_page([], {COMMANDS_QUEUE: 0, PLANS_QUEUE: 0}, [], NOW)
    text = Parsed(page).joined()
    assert "No runs yet." in text
    assert "Open pull requests" not in text and "Recent runs" not in text
    assert "No workers running" in text
    assert COMMANDS_QUEUE in text and PLANS_QUEUE in text
    assert '<meta http-equiv="refresh" content="10">' in page


def test_a_plan_run_shows_every_column() -> None:
    page = render_status_page([run()], {PLANS_QUEUE: 3}, [], NOW)
    parsed = Parsed(page)
    text = parsed.joined()
    for shown in ("acme/infra", "#7", "infra", SHA[:7], "0 to add, 0 to change, 1 to destroy", "failure", "30 s ago"):
        assert shown in text
    assert "1 to destroy — comment /approve-destroy" in text
    assert SHA not in text  # the full SHA is only in the tooltip
    links = [attrs["href"] for tag, attrs in parsed.tags if tag == "a"]
    assert links == ["https://github.com/acme/infra/pull/7#issuecomment-1"]
    assert re.search(rf"<td>{PLANS_QUEUE}</td><td>3</td>", page)


def test_apply_run_shows_approver_and_result() -> None:
    applied = run(kind="apply", approver="alice, bob", result="applied", gate="success", url=None, number=None)
    del applied["gate_description"]
    page = render_status_page([applied], {}, [], NOW)
    assert "alice, bob" in Parsed(page).joined()
    assert "● applied" in Parsed(_subsection(page, "Last apply per project")).joined()


def test_workers_are_listed_with_their_job() -> None:
    workers: list[dict[str, Any]] = [
        {"name": "w1", "state": "busy", "job": "plan:1", "queues": [PLANS_QUEUE], "heartbeat": NOW - 3},
        {"name": "w2", "state": "idle", "job": None, "queues": [COMMANDS_QUEUE, PLANS_QUEUE], "heartbeat": None},
    ]
    text = Parsed(render_status_page([], {}, workers, NOW)).joined()
    assert "w1" in text and "busy" in text and "plan:1" in text and "3 s ago" in text
    assert "w2" in text and "idle" in text and f"{COMMANDS_QUEUE}, {PLANS_QUEUE}" in text
    assert "No workers running" not in text


def test_only_http_links_are_clickable() -> None:
    runs = [run(url="javascript:alert(1)"), run(url="data:text/html,x"), run(url=None), run(url=42)]
    parsed = Parsed(render_status_page(runs, {}, [], NOW))
    assert not [tag for tag, _ in parsed.tags if tag == "a"]


def test_script_in_a_repo_name_is_inert() -> None:
    evil = '<script>alert("x")</script>'
    page = render_status_page([run(repo=evil, project=evil, summary=evil)], {evil: 1}, [{"name": evil}], NOW)
    assert "<script" not in page.lower()
    assert evil in Parsed(page).joined()


@given(st.text(), st.text(), st.text(), st.text())
def test_any_value_renders_as_text_never_as_markup(repo: str, project: str, summary: str, approver: str) -> None:
    runs = [run(repo=repo, project=project, summary=summary, approver=approver, gate_description=approver)]
    page = render_status_page(runs, {repo: 1}, [{"name": project, "state": summary, "job": approver}], NOW)
    parsed = Parsed(page)
    assert {tag for tag, _ in parsed.tags} <= ALLOWED_TAGS
    assert not [a for _, attrs in parsed.tags for a in attrs if a.startswith("on")]
    text = parsed.joined()
    for value in (repo, project, summary, approver):
        # The parser normalizes CR like a browser does; everything else must come back verbatim.
        assert value.replace("\r\n", "\n").replace("\r", "\n") in text.replace("\r\n", "\n").replace("\r", "\n")


def test_an_open_pr_shows_its_gate_in_a_word_with_what_the_check_says() -> None:
    page = render_status_page([run(run="run-7"), run(project="dns")], {}, [], NOW)
    section = _subsection(page, "Open pull requests")
    parsed = Parsed(section)
    assert "#70123456dns, infra● waiting for approval1 to destroy — comment /approve-destroy30 s ago" in parsed.joined()
    assert parsed.attrs("a", "href") == ["/runs/run-7"]
    assert parsed.attrs("span", "class")[0] == "state-pending"
    assert "waiting for approval" in Parsed(page.split("<h2")[1]).joined()  # the legend says what it means


def test_malformed_entries_do_not_break_the_page() -> None:
    odd: list[dict[str, Any]] = [{}, {"at": "yesterday", "number": None, "sha": None}, {"at": True, "gate": "weird"}]
    text = Parsed(render_status_page(odd, {}, [{}], NOW)).joined()
    assert "weird" in text and "Recent runs" in text


def _app(conn: redis.Redis) -> Starlette:
    """The page's route alone, opened with PLANGATE_STATUS_PUBLIC (who may read it: tests/test_status_auth.py)."""
    app = Starlette(routes=status_page.routes)
    app.state.redis = conn
    app.state.settings = settings.load({"PLANGATE_STATUS_PUBLIC": "true"})
    return app


def test_route_reads_runs_queues_and_workers_from_redis(redis_conn: redis.Redis) -> None:
    record_run(redis_conn, **{k: v for k, v in run().items() if k != "at"})
    Queue(PLANS_QUEUE, connection=redis_conn).enqueue(Jobs.PLAN_PR, kwargs={}, job_id="plan-1")
    worker = Worker([PLANS_QUEUE], name="status-page-test-worker", connection=redis_conn)
    worker.register_birth()  # type: ignore[no-untyped-call]
    try:
        response = TestClient(_app(redis_conn)).get("/")
    finally:
        worker.register_death()  # type: ignore[no-untyped-call]
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    text = Parsed(response.text).joined()
    assert "acme/infra" in text and "0 to add, 0 to change, 1 to destroy" in text and "0 s ago" in text
    assert re.search(rf"<td>{PLANS_QUEUE}</td><td>1</td>", response.text)
    assert re.search(rf"<td>{COMMANDS_QUEUE}</td><td>0</td>", response.text)
    assert "status-page-test-worker" in text


def test_route_sends_a_strict_csp_that_still_allows_its_own_style(redis_conn: redis.Redis) -> None:
    response = TestClient(_app(redis_conn)).get("/")
    csp = response.headers["content-security-policy"]
    assert "default-src 'none'" in csp and "unsafe" not in csp and "script-src" not in csp
    assert "frame-ancestors 'none'" in csp
    style = re.search(r"<style>(.*?)</style>", response.text, re.S)
    assert style
    digest = base64.b64encode(hashlib.sha256(style.group(1).encode()).digest()).decode()
    assert f"style-src 'sha256-{digest}'" in csp
    assert response.headers["x-content-type-options"] == "nosniff"
    assert "No runs yet." in response.text


def test_route_answers_503_when_redis_is_down() -> None:
    down = redis.Redis(port=free_port(), socket_connect_timeout=1)
    response = TestClient(_app(down)).get("/")
    assert response.status_code == 503
    assert "Redis unavailable" in response.text
    assert "default-src 'none'" in response.headers["content-security-policy"]


def test_last_drift_check_per_project() -> None:
    runs = [
        {
            "kind": "drift",
            "repo": "acme/infra",
            "project": "app",
            "sha": "b" * 40,
            "gate": "success",
            "result": "clean",
            "at": 200.0,
        },
        {
            "kind": "drift",
            "repo": "acme/infra",
            "project": "app",
            "sha": "a" * 40,
            "gate": "failure",
            "result": "drift",
            "number": 7,
            "at": 100.0,
        },
    ]
    page = render_status_page(runs, {}, [], now=300.0)
    section = _subsection(page, "Drift checks")
    assert section.count("<tr>") == 2  # header row + the newest check only
    assert "bbbbbbb" in section and "● clean" in section and "aaaaaaa" not in section


def test_a_signed_in_person_sees_who_they_are_and_only_counts_of_workers() -> None:
    workers: list[dict[str, Any]] = [{"name": "host-1", "state": "busy", "job": "drift-1234-infra-x", "queues": []}]
    mine = Access(login="alice", repos=frozenset({"acme/infra"}))
    text = Parsed(render_status_page([run()], {PLANS_QUEUE: 2}, workers, NOW, access=mine)).joined()
    assert "Signed in as @alice" in text and "Sign out" in text and "acme/infra" in text
    assert "1 running, 1 busy" in text and "host-1" not in text and "drift-1234" not in text
    assert "nothing to show" not in text
    nobody = Access(login="carol", repos=frozenset())
    empty = Parsed(render_status_page([], {PLANS_QUEUE: 2}, [], NOW, access=nobody)).joined()
    assert "You cannot read any repository this App is installed on" in empty and "Signed in as @carol" in empty


HOSTILE = '"><script>alert(1)</script>'
QUOTED = """o'brien "the" <b>bold</b>"""


def _section(page: str, heading: str) -> str:
    return page.split(f"<h2>{heading}</h2>")[1].split("<h2")[0]


def _subsection(page: str, heading: str) -> str:
    """A repository's part of the page (h3), up to the next heading."""
    return page.split(f"<h3>{heading}</h3>")[1].split("<h")[0]


def test_hostile_values_stay_text_wherever_the_page_shows_them() -> None:
    """Cells, attributes (tooltip, link), banners, worker rows, every part of a repository's view: a value may
    not close a cell, open a tag, pick a CSS class or become a link."""
    closes = "1 to add</td><td>forged</td></tr><tr><td>"
    hostile: dict[str, Any] = {
        "repo": HOSTILE,
        "project": HOSTILE,
        "number": HOSTILE,
        "sha": HOSTILE + SHA,
        "summary": closes,
        "gate": HOSTILE,
        "gate_description": closes,
        "approver": QUOTED,
        "result": closes,
        "url": f"https://example.com/{HOSTILE}",
        "run": HOSTILE,
    }
    runs = [run(kind=kind, **hostile) for kind in ("drift", "apply", "plan")] + [
        run(**{**hostile, "kind": "closed", "number": QUOTED})
    ]
    workers = [{"name": HOSTILE, "state": QUOTED, "job": closes, "queues": [HOSTILE], "heartbeat": NOW}]
    page = render_status_page(
        runs,
        {HOSTILE: 1},
        workers,
        NOW,
        access=EVERYTHING,
        sandboxes={HOSTILE: "OFF", QUOTED: f"OFF {closes}"},
        rate_limited={HOSTILE: (QUOTED, 3.0)},
    )
    assert "<script" not in page.lower() and "<b>" not in page
    parsed = Parsed(page)
    assert {tag for tag, _ in parsed.tags} <= ALLOWED_TAGS
    assert parsed.attrs("a", "href") == [f"https://example.com/{HOSTILE}"] * 4  # the comment links; no run link
    titles = [title for title in parsed.attrs("code", "title") if title]  # the legend's code has none
    assert titles == [HOSTILE + SHA] * 7  # open PR, apply, drift, and the 4 recent runs
    assert {css for _, attrs in parsed.tags for css in [attrs.get("class")] if css} <= CLASSES
    text = parsed.joined()
    for value in (HOSTILE, QUOTED, closes, f"#{HOSTILE}", f"SANDBOX OFF on {HOSTILE}, {QUOTED}"):
        assert value in text
    assert f"installation {HOSTILE} ({QUOTED} limit, about 3 s more)" in text
    repo_cells = 6 + 6 + 6 + 6 * 4  # the open PR, its apply, its drift check, four runs in its timeline
    cells = {"Recent runs": 12 * 4, "Queues": 2, "Workers": 5, str(escape(HOSTILE)): repo_cells}
    for heading, count in cells.items():
        section = page.split(f">{heading}</h2>")[1].split("<h2")[0]
        assert section.count("<td>") == count, heading  # no cell was closed or opened by a value


def test_a_signed_in_login_and_sign_out_url_stay_text() -> None:
    signout = f"https://gate.example.org/auth/signout?next={HOSTILE}"
    page = render_status_page([], {}, [], NOW, access=Access(login=QUOTED, repos=frozenset()), signout_url=signout)
    assert "<script" not in page.lower() and "<b>" not in page
    parsed = Parsed(page)
    assert f"Signed in as @{QUOTED}" in parsed.joined()
    assert parsed.attrs("a", "href") == [signout]


def test_the_page_carries_the_exact_style_its_csp_hash_pins() -> None:
    page = render_status_page([run()], {}, [], NOW)
    assert page.count("<style>") == 1 and f"<style>{status_page._STYLE}</style>" in page


def test_no_template_marks_anything_safe_but_our_own_style() -> None:
    """Autoescaping is the only escaping: |safe on a value, or autoescaping switched off, would let it through raw.

    Read from each template's syntax tree, so spacing, `{% filter safe %}` or a mention in a comment change nothing."""
    templates = sorted(TEMPLATES.glob("*.html"))
    assert {t.name for t in templates} >= {"base.html", "status.html", "setup_create.html", "signin_refused.html"}
    marked: dict[str, list[str | None]] = {}
    for template in templates:
        tree = jinja2.Environment().parse(template.read_text())
        assert not list(tree.find_all(nodes.EvalContextModifier)), f"{template.name} switches autoescaping"
        for used in tree.find_all(nodes.Filter):
            if used.name == "safe":
                name = used.node.name if isinstance(used.node, nodes.Name) else None
                marked.setdefault(template.name, []).append(name)
    assert marked == {"base.html": ["style"]}  # the CSS constants status_page._STYLE and setup_pages._STYLE


def failed(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "project": {"name": "app", "dir": "infra"},
        "sha": SHA,
        "number": 12,
        "branch": "main",
        "repo": "acme/infra",
        "url": "https://github.com/acme/infra/issues/12",
    }
    return {**base, **fields}


def test_failed_applies_come_first_with_their_issue() -> None:
    page = render_status_page([run()], {}, [], NOW, failed=[failed()])
    parsed = Parsed(page)
    assert page.index("Failed applies") < page.index("Open pull requests") < page.index("Recent runs")
    assert "acme/infraapp0123456#12" in parsed.joined()
    assert "https://github.com/acme/infra/issues/12" in parsed.attrs("a", "href")


def test_a_failed_apply_with_an_odd_record_shows_no_link() -> None:
    parsed = Parsed(render_status_page([], {}, [], NOW, failed=[failed(url="javascript:alert(1)", project=None)]))
    assert not [tag for tag, _ in parsed.tags if tag == "a"]
    assert "Failed applies" in parsed.joined()


def test_no_failed_apply_no_section() -> None:
    assert "Failed applies" not in render_status_page([], {}, [], NOW)


def test_route_reads_failed_applies_from_redis(redis_conn: redis.Redis) -> None:
    redis_conn.hset("plangate:failed-applies:1000", "app@default:infra", json.dumps(failed()))
    text = Parsed(TestClient(_app(redis_conn)).get("/").text).joined()
    assert "Failed applies" in text and "#12" in text


def test_a_reader_sees_only_the_failed_applies_of_their_repositories(redis_conn: redis.Redis) -> None:
    redis_conn.hset("plangate:failed-applies:1000", "app@default:infra", json.dumps(failed()))
    redis_conn.hset("plangate:failed-applies:2000", "db@default:db", json.dumps(failed(repo="acme/secret")))
    assert [r["repo"] for r in read_failed(redis_conn, frozenset({"acme/infra"}))] == ["acme/infra"]
    assert [r["repo"] for r in read_failed(redis_conn, None)] == ["acme/infra", "acme/secret"]


def test_the_log_keeps_the_last_thousand_runs_and_the_page_reads_them_all(redis_conn: redis.Redis) -> None:
    record_run(redis_conn, **{k: v for k, v in run(number=1, project="old", run="first-run").items() if k != "at"})
    for i in range(KEEP - 1):
        record_run(
            redis_conn, kind="drift", repo="acme/busy", project=f"p{i % 7}", sha=SHA, gate="success", result="clean"
        )
    assert redis_conn.llen(RUNS_KEY) == KEEP
    page = TestClient(_app(redis_conn)).get("/").text
    assert 'href="/runs/first-run"' in page  # the oldest entry kept still shows its PR, open
    record_run(redis_conn, kind="drift", repo="acme/busy", project="p0", sha=SHA, gate="success", result="clean")
    assert redis_conn.llen(RUNS_KEY) == KEEP
    assert "/runs/first-run" not in TestClient(_app(redis_conn)).get("/").text  # trimmed off the log


def test_a_reader_of_some_repositories_sees_their_prs_however_deep_in_the_log(redis_conn: redis.Redis) -> None:
    """The open PR of a reader's repository, under 900 runs of others', shows; nothing of the others does."""
    record_run(redis_conn, **{k: v for k, v in run(repo="Acme/Infra", run="mine-1").items() if k != "at"})
    for i in range(900):
        record_run(redis_conn, kind="plan", repo=f"acme/secret{i % 3}", number=i, project="s", sha=SHA, gate="success")
    seen = status_reads.read(redis_conn, frozenset({"acme/infra"}))
    assert [r["repo"] for r in seen.runs] == ["Acme/Infra"]
    page = render_status_page(seen.runs, {}, [], NOW, access=Access("alice", frozenset({"acme/infra"})))
    assert "secret" not in page and 'href="/runs/mine-1"' in page and "Open pull requests" in page
    everything = status_reads.read(redis_conn, None)
    assert len(everything.runs) == 901


def test_the_run_log_skips_what_is_not_an_entry_and_reads_what_the_stdlib_wrote(redis_conn: redis.Redis) -> None:
    odd = json.dumps({"kind": "plan", "at": float("nan"), "number": 2**70, "repo": "acme/infra"})
    redis_conn.lpush(RUNS_KEY, b"not json", b"[1]", b"\xff", odd, json.dumps({"kind": "apply", "at": 5.0}))
    apply, plan = recent_runs(redis_conn, 10)
    assert apply == {"kind": "apply", "at": 5.0}
    assert plan["number"] == 2**70 and plan["at"] != plan["at"]  # NaN, as json.dumps wrote it
    assert f"#{2**70}" in Parsed(render_status_page([apply, plan], {}, [], NOW)).joined()
