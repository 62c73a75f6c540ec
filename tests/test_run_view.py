"""bot.run_view and templates/run.html, pure: grouping order, folding, omitted counts, verdict words, links,
and hostile values that stay text."""

from __future__ import annotations

import dataclasses
from html.parser import HTMLParser
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from jinja2 import Environment, FileSystemLoader, select_autoescape

from bot.run_view import FOLD_CHARS, FOLD_LINES, groups, run_view, value
from core.runs import Attribute, Line, ResourceDiff, RunGate, RunHead, RunPlan, Stored, Verdict

TEMPLATES = Path(__file__).resolve().parent.parent / "bot" / "templates"
ENV = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape())
SHA = "0123456789abcdef0123456789abcdef01234567"
HOSTILE = '"><script>window.pwned=1</script><img src=x onerror=window.pwned=2>'
ALLOWED_TAGS = {
    "html", "head", "meta", "title", "link", "script", "body", "h1", "h2", "h3", "h4", "p", "a", "span", "strong",
    "table", "thead", "tbody", "tr", "th", "td", "code", "pre", "details", "summary", "section", "ul", "li",
    "noscript",
}  # fmt: skip


def head(**fields: object) -> RunHead:
    base = RunHead(
        id="a" * 24,
        kind="plan",
        repo="acme/infra",
        repo_id=7,
        sha=SHA,
        project="app",
        dir="infra",
        workspace="default",
        number=12,
        started=1000.0,
        ended=1065.0,
        outcome="planned",
        ok=True,
        summary="1 to add, 1 to change, 2 to destroy",
    )
    return dataclasses.replace(base, **fields)  # type: ignore[arg-type]


def resource(address: str, action: str, gated: bool = False, *attrs: Attribute) -> ResourceDiff:
    return ResourceDiff(address, action, gated, attributes=attrs)


PLAN = RunPlan(
    (
        resource("terraform_data.gone", "delete", True, Attribute("input", '"old"', None)),
        resource("terraform_data.swap", "replace", True, Attribute("input", '"a"', '"b"')),
        resource("terraform_data.ruled", "update", True, Attribute("input", '"x"', '"y"')),
        resource("terraform_data.changed", "update", False, Attribute("input", '"1"', '"2"')),
        resource("terraform_data.new", "create", False, Attribute("input", None, '"fresh"')),
        resource("terraform_data.secret", "create", False, Attribute("input", None, "(sensitive value)")),
    ),
    omitted=3,
    outputs_changed=("endpoint",),
)
GATE = RunGate(
    "failure",
    "2 to destroy — comment /approve-destroy",
    (
        Verdict("terraform_data.gone", "destroy", "waiting", "needs 1 approval by write", ()),
        Verdict("terraform_data.swap", "destroy", "approved", "", ("alice", "bob")),
        Verdict("terraform_data.ruled", "change", "never", "rule forbids it"),
        Verdict("x", "destroy", "voided"),
        Verdict("y", "destroy", "made-up"),
    ),
)


class Parsed(HTMLParser):
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


def render(stored: Stored, siblings: list[RunHead] | None = None) -> str:
    view = run_view(stored, siblings or [stored.head], 2000.0, "/p", "https://github.com")
    return ENV.get_template("run.html").render(page=view, static_url="/p/static", home_url="/p/")


def test_groups_put_gated_changes_first_then_follow_the_action_order() -> None:
    shuffled = RunPlan(tuple(reversed(PLAN.resources)))
    headings = [g.heading for g in groups(shuffled)]
    assert headings == ["Destroy", "Replace", "Update (gated)", "Update", "Create"]
    assert [r.address for r in groups(shuffled)[-1].resources] == ["terraform_data.secret", "terraform_data.new"]
    odd = RunPlan((resource("a", "read"), resource("b", "forget"), resource("c", "unknown", True), resource("d", "?")))
    assert [g.heading for g in groups(odd)] == [
        "Unknown action (gated)",
        "Action '?'",
        "Read",
        "Forget (removed from state, object kept)",
    ]
    assert groups(None) == [] and groups(RunPlan(())) == []


def test_long_values_fold_and_short_ones_do_not() -> None:
    assert value(None).text is None and not value(None).folded
    assert not value("x" * FOLD_CHARS).folded
    long = value("y" * (FOLD_CHARS + 1))
    assert long.folded and long.preview.endswith("…") and long.text == "y" * (FOLD_CHARS + 1)
    lines = value("\n".join(["line"] * (FOLD_LINES + 1)))
    assert lines.folded and lines.preview == "line…"
    assert not value("\n".join(["line"] * FOLD_LINES)).folded
    assert value("").text == "" and not value("").folded


def test_the_page_shows_facts_groups_diffs_gate_and_output() -> None:
    stored = Stored(head(), PLAN, GATE, (Line("1-0", "\x1b[31mred\x1b[0m plain"),))
    sibling = head(id="b" * 24, project="net", ended=None, outcome=None, ok=None)
    page = render(stored, [stored.head, sibling])
    text = Parsed(page).joined()
    for shown in ("plan: app", "planned", "acme/infra", "#12", SHA[:12], "infra", "default", "terraform", "1 min 5 s"):
        assert shown in text, shown
    assert "1 to add, 1 to change, 2 to destroy" in text
    assert text.index("Destroy") < text.index("Replace") < text.index("Update (gated)") < text.index("Create")
    assert '"old"' in text and "(absent)" in text and "(sensitive value)" in text
    assert "3 more resources not drawn." in text and "endpoint" in text
    for word in ("waiting for approval", "approved", "never allowed", "voided by a newer plan", "made-up"):
        assert word in text, word
    assert "@alice, @bob" in text and "needs 1 approval by write" in text
    assert '<span class="line" data-id="1-0"><span class="a-f1">red</span> plain</span>' in page
    assert 'href="https://github.com/acme/infra/pull/12"' in page
    assert f'href="https://github.com/acme/infra/commit/{SHA}"' in page
    assert f'href="/p/runs/{"b" * 24}"' in page and "net" in text
    assert 'href="/p/static/run.css"' in page
    assert "live.js" not in page and "refresh" not in page  # an ended run: no stream, no reload


def test_a_running_run_refreshes_without_javascript_and_streams_with_it() -> None:
    page = render(Stored(head(ended=None, outcome=None, ok=None), None, None, (Line("5-1", "x"),)))
    assert '<noscript><meta http-equiv="refresh" content="10"></noscript>' in page
    assert '<script src="/p/static/live.js" defer></script>' in page
    assert 'data-events="/p/runs/aaaaaaaaaaaaaaaaaaaaaaaa/events" data-after="5-1" data-running="true"' in page
    assert "No plan yet" in Parsed(page).joined() and "running" in Parsed(page).joined()


def test_links_only_for_a_plain_repository_name_and_issue_links_for_other_kinds() -> None:
    page = render(Stored(head(kind="drift", number=4)))
    assert 'href="https://github.com/acme/infra/issues/4"' in page
    odd = render(Stored(head(repo="javascript:alert(1)//x", sha="not-a-sha", number=None)))
    hrefs = [attrs.get("href") for tag, attrs in Parsed(odd).tags if tag == "a"]
    assert hrefs == ["/p/"]
    failed = Parsed(render(Stored(head(ok=False, outcome="failed"), RunPlan(())))).joined()
    assert "failed" in failed and "No changes." in failed


def test_hostile_values_stay_text() -> None:
    evil_plan = RunPlan(
        (
            ResourceDiff(HOSTILE, "delete", True, HOSTILE, HOSTILE, (Attribute(HOSTILE, HOSTILE, HOSTILE * 5),)),
            ResourceDiff("ok", HOSTILE, False),
        ),
        outputs_changed=(HOSTILE,),
    )
    evil_gate = RunGate(HOSTILE, HOSTILE, (Verdict(HOSTILE, HOSTILE, HOSTILE, HOSTILE, (HOSTILE,)),))
    hostile_head = head(
        repo=HOSTILE, project=HOSTILE, dir=HOSTILE, workspace=HOSTILE, tool=HOSTILE, summary=HOSTILE, outcome=HOSTILE
    )
    page = render(Stored(hostile_head, evil_plan, evil_gate, (Line("1-0", HOSTILE),)))
    parsed = Parsed(page)
    assert "<script>" not in page and "<img" not in page
    assert {tag for tag, _ in parsed.tags} <= ALLOWED_TAGS
    assert [attrs for tag, attrs in parsed.tags if tag == "script"] == []  # an ended run loads no script
    assert not [a for _, attrs in parsed.tags for a in attrs if a.startswith("on")]
    assert parsed.joined().count(HOSTILE) >= 12


@given(st.text(), st.text(), st.text())
def test_any_value_renders_as_text(address: str, before: str, line: str) -> None:
    plan = RunPlan((ResourceDiff(address, "update", False, attributes=(Attribute(address, before, line),)),))
    page = render(Stored(head(project=address, summary=before), plan, None, (Line("1-0", line),)))
    parsed = Parsed(page)
    assert {tag for tag, _ in parsed.tags} <= ALLOWED_TAGS
    assert not [a for _, attrs in parsed.tags for a in attrs if a.startswith("on")]
