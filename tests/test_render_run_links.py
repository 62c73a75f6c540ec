"""Run page links (core/render/run_links.py) and the plan comment that carries them (core/render/plan.py)."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from core.render.run_links import reported_run, run_link, run_url, run_urls
from core.runs import run_id
from tests.test_render import big_plan, fences_balanced, make_plan, project, rc, render

BASE = "https://gate.example.org/plangate"
RUN = run_id("job-1", "dns@default:infra/dns")


def test_a_run_url_needs_a_public_url_and_a_valid_id() -> None:
    assert run_url(BASE, RUN) == f"{BASE}/runs/{RUN}"
    assert run_url(BASE + "/", RUN) == f"{BASE}/runs/{RUN}"
    assert run_url(None, RUN) is None and run_url("", RUN) is None
    assert run_url(BASE, None) is None
    for bad in ("", "x" * 23, "x" * 25, "../../setup?x=1&y=22", "a" * 23 + ")", "a" * 23 + " "):
        assert run_url(BASE, bad) is None
    assert run_urls(BASE, {"a": RUN, "b": "bad id"}) == {"a": f"{BASE}/runs/{RUN}"}
    assert run_urls(None, {"a": RUN}) == {}
    assert run_link(f"{BASE}/runs/{RUN}") == f"[run page]({BASE}/runs/{RUN})"


def test_the_report_links_the_first_blocked_else_failed_else_first_run() -> None:
    runs = {"a": "ra", "b": "rb", "c": "rc", "d": "rd"}
    order = ["a", "b", "c", "d"]
    assert reported_run(order, runs, blocked={"c"}, failed={"b"}) == "rc"
    assert reported_run(order, runs, blocked={"d", "c"}, failed=()) == "rc"
    assert reported_run(order, runs, blocked=(), failed={"d", "b"}) == "rb"
    assert reported_run(order, runs, blocked=(), failed=()) == "ra"
    assert reported_run(["x", "b"], runs, blocked={"x"}, failed=()) == "rb"  # x has no run: it cannot be linked
    assert reported_run(["x"], runs, blocked={"x"}, failed=()) is None
    assert reported_run([], {}, blocked=(), failed=()) is None


def _headline(body: str, dir_: str) -> str:
    return next(line for line in body.splitlines() if line.startswith("- ") and f"dir `{dir_}`" in line)


def test_each_headline_links_its_own_run_and_nothing_else_changes() -> None:
    dns = project(make_plan(rc("a.b", "delete")), "- a.b", name="dns", dir="infra/dns")
    web = project(make_plan(rc("c.d", "create")), "+ c.d", name="web", dir="infra/web")
    links = {dns.identity: f"{BASE}/runs/{RUN}"}
    plain, linked = render(dns, web), render(dns, web, links=links)
    assert _headline(linked[0], "infra/dns") == _headline(plain[0], "infra/dns") + f" · [run page]({BASE}/runs/{RUN})"
    assert _headline(linked[0], "infra/web") == _headline(plain[0], "infra/web")
    assert linked[0].count("[run page](") == 1
    assert "[run page]" not in "".join(plain)


HOSTILE = [
    "x](https://evil.example/)",
    "[click](https://evil.example/",
    "`open code",
    "<a href='https://evil.example'>",
    "name)\n- fake",
    "a**b__c[d]e(f)g",
]


@given(name=st.sampled_from(HOSTILE) | st.text(min_size=1, max_size=40), dir_=st.text(min_size=1, max_size=20))
@settings(max_examples=60, deadline=None)
def test_a_hostile_name_cannot_break_or_redirect_the_link(name: str, dir_: str) -> None:
    result = project(make_plan(rc("a.b", "delete")), "- a.b", name=name, dir=dir_)
    url = f"{BASE}/runs/{RUN}"
    body = render(result, links={result.identity: url})[0]
    headlines = [line for line in body.splitlines() if line.startswith("- ") and "[run page](" in line]
    assert len(headlines) == 1
    assert headlines[0].endswith(f" · [run page]({url})")  # last on its line, exactly as written
    assert body.count("[run page](") == 1


def test_links_count_against_the_limit_and_every_part_still_fits() -> None:
    plan, text = big_plan(8_000, 2_000)
    results = [project(plan, text, name=f"p{i}", dir=f"infra/p{i}") for i in range(30)]
    links = {r.identity: f"{BASE}/runs/{run_id('job', r.identity)}" for r in results}
    bodies = render(*results, links=links)
    assert all(len(b) <= 65_536 and fences_balanced(b) for b in bodies)
    shown = re.findall(r"\[run page\]\((\S+?)\)$", bodies[0], re.M)
    assert shown and set(shown) <= set(links.values())


@settings(max_examples=25, deadline=None)
@given(limit=st.integers(min_value=4096, max_value=20_000), projects=st.integers(min_value=1, max_value=80))
def test_any_limit_is_respected_with_links(limit: int, projects: int) -> None:
    results = [
        project(make_plan(rc("a.b", "delete")), "- a.b\n" * 50, name=f"p{i}", dir=f"d{i}") for i in range(projects)
    ]
    links = {r.identity: f"{BASE}/runs/{run_id('job', r.identity)}" for r in results}
    assert all(len(b) <= limit for b in render(*results, links=links, limit=limit))
