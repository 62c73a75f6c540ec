"""Run pages in a real headless Chromium: a real terraform plan's page (grouped diff, masked secrets, the gate
per destroy), a reader without access (404, no names), and a running run's live output across a reconnect.

plangate web runs in this process (uvicorn), signed in through the stand-in GitHub's web flow; the records
are written with plumbing.run_store.RunStore as a worker writes them, sealed with the App's key.
"""

from __future__ import annotations

import dataclasses
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis
import uvicorn
from playwright.sync_api import Browser, BrowserContext, Page, expect

from bot.app import create_app
from core.plan import parse_plan
from core.render.mask import Masker
from core.results import ProjectResult
from core.run_plan import run_plan
from core.runs import RunGate, RunHead, RunPlan, Verdict, run_id
from plumbing import settings
from plumbing.records import Records
from plumbing.run_store import RunStore
from standin import StandIn, start
from standin.local_redis import free_port
from tests.keys import rsa_pem
from tests.tfplans import TOOL, Project

pytestmark = pytest.mark.e2e

SECRET = "hunter2-launch-code-7731"  # a sensitive variable's value: terraform hides it
TOKENISH = "tok-QWERTYUIOPASDFGH"  # not sensitive to terraform, hidden by a mask pattern
PATTERNS = ("tok-[A-Z]{16}",)
BASE = """
variable "secret" {
  type      = string
  sensitive = true
  default   = "%s"
}
resource "terraform_data" "keep" { input = "a" }
resource "terraform_data" "doomed" { input = "b" }
resource "terraform_data" "swap" {
  input            = "s"
  triggers_replace = ["v1"]
}
resource "terraform_data" "changed" { input = "old" }
resource "terraform_data" "hidden" { input = var.secret }
"""
CHANGED = """
variable "secret" {
  type      = string
  sensitive = true
  default   = "%s"
}
resource "terraform_data" "keep" { input = "a" }
resource "terraform_data" "swap" {
  input            = "s"
  triggers_replace = ["v2"]
}
resource "terraform_data" "changed" { input = "%s" }
resource "terraform_data" "hidden" { input = var.secret }
resource "terraform_data" "fresh" { input = "brand new" }
"""


@dataclass
class Site:
    gh: StandIn
    url: str
    store: RunStore
    repo_id: int


@pytest.fixture
def site(tmp_path: Path, redis_url: str, redis_conn: redis.Redis) -> Iterator[Site]:
    """acme/infra (alice may read it, mallory may not) on the stand-in, and plangate web with the App's key;
    the live stream closes after 3 s, so a test sees the browser reconnect."""
    key = rsa_pem()
    gh = StandIn(tmp_path / "git", key, app_id=4242)
    infra = gh.create_repo("acme", "infra", {"README.md": "x\n"}, private=True)
    gh.set_permission(infra, "alice", "read")
    port = free_port()
    gh.app.callback_urls = [f"http://127.0.0.1:{port}/auth/callback"]
    with start(gh) as server:
        env = {
            "GITHUB_WEBHOOK_SECRET": "s",
            "REDIS_URL": redis_url,
            "GITHUB_API_URL": server.base_url,
            "GITHUB_APP_ID": "4242",
            "GITHUB_APP_PRIVATE_KEY": key,
            "GITHUB_CLIENT_ID": gh.app.client_id,
            "GITHUB_CLIENT_SECRET": gh.app.client_secret,
            "PLANGATE_RUN_STREAM_SECONDS": "3",
        }
        web = uvicorn.Server(uvicorn.Config(create_app(settings.load(env)), port=port, log_level="warning"))
        thread = threading.Thread(target=web.run, daemon=True)
        thread.start()
        deadline = time.monotonic() + 10
        while not web.started and time.monotonic() < deadline:
            time.sleep(0.01)
        try:
            yield Site(gh, f"http://127.0.0.1:{port}", RunStore(Records(redis_conn, key)), infra.id)
        finally:
            web.should_exit = True
            thread.join(10)


def head_of(site: Site, job: str, project: str = "app") -> RunHead:
    return RunHead(
        id=run_id(job, f"{project}|default|infra"),
        kind="plan",
        repo="acme/infra",
        repo_id=site.repo_id,
        sha="c" * 40,
        project=project,
        dir="infra",
        workspace="default",
        number=5,
        tool=Path(TOOL or "terraform").name,
        started=time.time(),
    )


def signed_in(browser: Browser, site: Site, login: str, js: bool = True) -> tuple[BrowserContext, Page, list[str]]:
    """A browser context signed in as `login` (GitHub's web flow), with its console messages collected."""
    site.gh.sign_in_browser(login)
    context = browser.new_context(java_script_enabled=js)
    page = context.new_page()
    console: list[str] = []
    page.on("console", lambda message: console.append(message.text))
    page.on("pageerror", lambda error: console.append(str(error)))
    answer = page.goto(site.url + "/")
    assert answer is not None and answer.status == 200 and f"@{login}" in page.inner_text("body")
    return context, page, console


def real_plan(tmp_path: Path, tf_env: dict[str, str]) -> tuple[RunPlan, list[str]]:
    """A real plan with a create, an update, a replace and a destroy, drawn as the worker draws it, and its
    coloured output masked as the worker masks it."""
    project = Project(tmp_path, tf_env)
    project.apply(BASE % SECRET)
    project.configure(CHANGED % (SECRET + "-rotated", TOKENISH))
    out = project.run("plan", "-input=false", "-out=plan.bin").stdout.decode()
    source = project.run("show", "-json", "plan.bin").stdout
    result = ProjectResult("app", "infra", "default", "terraform", "c" * 40, parse_plan(source))
    drawn = run_plan(result, PATTERNS, source=source)
    assert drawn is not None
    masker = Masker(result.secrets, PATTERNS)
    return drawn, [masker(line) for line in out.splitlines()]


def test_a_plan_page_groups_the_diff_masks_secrets_and_shows_the_gate(
    tmp_path: Path, tf_env: dict[str, str], site: Site, browser: Browser
) -> None:
    drawn, output = real_plan(tmp_path, tf_env)
    assert any("\x1b[" in line for line in output)  # terraform's colours, kept
    head = head_of(site, "plan-job")
    site.store.start(head)
    site.store.append(head, output)
    summary = "2 to add, 2 to change, 2 to destroy"
    site.store.finish(dataclasses.replace(head, ended=time.time(), outcome="planned", ok=True, summary=summary), drawn)
    verdicts = (
        Verdict("terraform_data.doomed", "destroy", "waiting", "needs an approval by write"),
        Verdict("terraform_data.swap", "destroy", "approved", "approved on this plan", ("alice",)),
    )
    site.store.set_gate([head.id], RunGate("failure", "1 to destroy — comment /approve-destroy", verdicts))
    sibling = head_of(site, "plan-job", "net")
    site.store.start(sibling)

    context, page, console = signed_in(browser, site, "alice")
    answer = page.goto(f"{site.url}/runs/{head.id}")
    assert answer is not None and answer.status == 200
    assert "script-src 'self'" in answer.headers["content-security-policy"]
    headings = page.locator("h3.group").all_inner_texts()
    assert [h.split(" (")[0] for h in headings] == ["Destroy", "Replace", "Update", "Create"]
    assert page.locator("section.act-delete h4").inner_text().startswith("terraform_data.doomed")
    assert page.locator("section.act-replace h4").inner_text().startswith("terraform_data.swap")
    assert page.locator("section.act-create h4").inner_text().startswith("terraform_data.fresh")
    updates = page.locator("section.act-update")
    assert updates.count() == 2
    changed = page.locator("section.act-update:has(h4:has-text('terraform_data.changed')) table.diff tbody tr")
    assert changed.locator("td.before").first.inner_text() == '"old"'
    assert changed.locator("td.after").first.inner_text() == '"(sensitive value)"'  # the mask pattern's, as comments
    hidden = page.locator("section.act-update:has(h4:has-text('terraform_data.hidden')) table.diff tbody tr")
    assert "(sensitive value)" in hidden.first.inner_text()
    gate = page.inner_text("table.verdicts")
    assert "terraform_data.doomed" in gate and "waiting for approval" in gate and "needs an approval by write" in gate
    assert "approved" in gate and "@alice" in gate
    waiting = page.locator("table.verdicts span.waiting")
    assert waiting.evaluate("e => getComputedStyle(e).color") == "rgb(154, 103, 0)"  # run.css loaded
    body = page.content()
    for leaked in (SECRET, TOKENISH):
        assert leaked not in body
    assert "Plan:" in page.inner_text("#output") and page.locator("#output span.a-b").count() > 0
    assert page.locator("#output .a-f1").count() > 0  # destroy lines in terraform's red
    assert page.get_attribute(f"a[href='/runs/{sibling.id}']", "href") == f"/runs/{sibling.id}"
    assert page.locator("script").count() == 0  # an ended run streams nothing
    assert not [m for m in console if "Content Security Policy" in m or "Refused" in m], console
    page.screenshot(path=str(tmp_path / "run.png"), full_page=True)
    context.close()

    context, page, console = signed_in(browser, site, "mallory")
    answer = page.goto(f"{site.url}/runs/{head.id}")
    assert answer is not None and answer.status == 404
    hidden_body = answer.text()
    assert "acme/infra" not in page.content() and "terraform_data" not in page.content()
    missing = page.goto(f"{site.url}/runs/{'z' * 24}")
    assert missing is not None and missing.status == 404 and missing.text() == hidden_body
    context.close()


def test_live_lines_appear_once_across_a_reconnect_and_the_end_reloads(site: Site, browser: Browser) -> None:
    head = head_of(site, "live-job")
    site.store.start(head)
    site.store.append(head, ["Initializing the backend..."])
    context, page, console = signed_in(browser, site, "alice")
    streams: list[str] = []
    page.on("request", lambda request: streams.append(request.url) if "/events" in request.url else None)
    # Every stream asked from the start, as if the page's resume point were lost: the page itself must
    # skip the lines it already has.
    page.route("**/events?*", lambda route: route.continue_(url=route.request.url.split("?")[0]))
    answer = page.goto(f"{site.url}/runs/{head.id}")
    assert answer is not None and answer.status == 200
    assert page.locator("#output span.line").count() == 1
    assert page.locator("meta[http-equiv=refresh]").count() == 0  # with JavaScript the stream updates, no reload
    expect(page.locator("#live")).to_have_text(re.compile("^Live: new lines"))  # page.wait_for_function is eval: CSP

    site.store.append(head, ["\x1b[1mterraform_data.a: Refreshing state...\x1b[0m", "<img src=x onerror=alert(1)>"])
    expect(page.locator("#output span.line")).to_have_count(3, timeout=10_000)
    assert page.locator("#output span.a-b").inner_text() == "terraform_data.a: Refreshing state..."
    assert page.locator("#output img").count() == 0
    assert "<img src=x onerror=alert(1)>" in page.inner_text("#output")

    deadline = time.monotonic() + 15
    while len(streams) < 2 and time.monotonic() < deadline:  # the server closes after 3 s; EventSource returns
        page.wait_for_timeout(200)
    assert len(streams) >= 2, streams
    site.store.append(head, [f"after reconnect {n}" for n in range(3)])
    expect(page.locator("#output span.line")).to_have_count(6, timeout=10_000)
    page.wait_for_timeout(4000)  # another reconnect passes: still nothing twice
    lines = page.locator("#output span.line").all_inner_texts()
    assert len(lines) == len(set(lines)) == 6, lines

    plain, still, _ = signed_in(browser, site, "alice", js=False)  # without JavaScript: complete, and reloading
    still.goto(f"{site.url}/runs/{head.id}")
    assert still.locator("#output span.line").all_inner_texts() == lines
    assert still.locator("meta[http-equiv=refresh]").get_attribute("content") == "10"
    plain.close()

    site.store.append(head, ["Plan: 0 to add, 0 to change, 0 to destroy."])
    ended = dataclasses.replace(head, ended=time.time(), outcome="no changes", ok=True, summary="No changes.")
    with page.expect_navigation(timeout=15_000):
        site.store.finish(ended, RunPlan(()))
    page.wait_for_load_state()
    assert page.locator("#output").get_attribute("data-running") == "false"
    assert page.locator("#output span.line").count() == 7
    assert "no changes" in page.inner_text("h1") and "No changes." in page.inner_text("body")
    assert page.locator("script").count() == 0
    assert not [m for m in console if "Content Security Policy" in m or "Refused" in m], console
    context.close()
