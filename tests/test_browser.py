"""The status page in a real headless Chromium, after a real PR that destroys something went through the stack.

The browser signs in with GitHub (the stand-in's web flow) as @alice, who can read the repository; the
hostile-content check uses PLANGATE_STATUS_TOKEN instead, which shows every repository.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import redis
from playwright.sync_api import Browser

from plumbing.runlog import recent_runs, record_run
from standin.stack import Stack, running_stack
from tests.tfproject import apply_directly, main_tf

pytestmark = pytest.mark.e2e

HOSTILE = "<script>window.pwned=1</script><img src=x onerror=window.pwned=2>"
TOKEN = "browser-test-status-token-0123456789"


def _gated(stack: Stack, repo: object, sha: str) -> bool:
    states = {ctx: s.state for ctx, s in stack.gh.reports(repo, sha).items()}  # type: ignore[arg-type]
    return states.get("plangate/destroy") == "failure" and states.get("plangate/plan") == "success"


def test_a_person_sees_the_gated_pr_on_the_status_page(
    tmp_path: Path, redis_url: str, redis_conn: redis.Redis, browser: Browser
) -> None:
    state = tmp_path / "state" / "terraform.tfstate"
    base = main_tf(state, {"keep": "a", "doomed": "b"})
    apply_directly(tmp_path / "applied", base)
    with running_stack(tmp_path, redis_url, extra_env={"PLANGATE_STATUS_TOKEN": TOKEN}) as stack:
        gh = stack.gh
        repo = gh.create_repo("acme", "infra", {"infra/main.tf": base})
        gh.set_permission(repo, "alice", "read")
        gh.sign_in_browser("alice")
        pr = gh.open_pr(repo, "remove", "alice", "Remove a resource", {"infra/main.tf": main_tf(state, {"keep": "a"})})
        stack.wait_for("the destroy gate on the PR", lambda: _gated(stack, repo, pr.head_sha))
        stack.wait_for("the run in the run log", lambda: recent_runs(redis_conn, 5))

        context = browser.new_context(java_script_enabled=False)  # readable without JavaScript
        page = context.new_page()
        csp_reports: list[str] = []
        page.on("console", lambda message: csp_reports.append(message.text))
        response = page.goto(stack.web_url + "/")  # to GitHub, signed in as @alice, and back
        assert response is not None and response.status == 200 and response.url == stack.web_url + "/"
        assert "default-src 'none'" in response.headers["content-security-policy"]
        seen = page.inner_text("body")
        assert "Signed in as @alice" in seen
        assert "acme/infra" in seen
        assert f"#{pr.number}" in seen
        assert pr.head_sha[:7] in seen
        assert "0 to add, 0 to change, 1 to destroy" in seen
        assert page.inner_text("h2.repo").strip() == "acme/infra"
        (row,) = page.locator("h3:has-text('Open pull requests') + table tbody tr").all()  # the PR, at a glance
        cells = [cell.strip() for cell in row.locator("td").all_inner_texts()]
        assert cells[:3] == [f"#{pr.number}", pr.head_sha[:7], "infra"]
        assert row.locator(".state-pending").inner_text().strip() == "● waiting for approval"
        assert "1 to destroy — comment /approve-destroy" in cells[3]
        timeline = page.inner_text("h3:has-text('Last runs') + table")
        assert "plan" in timeline and "waiting for approval" in timeline
        runs_table = page.inner_text("h2:has-text('Recent runs') + table")
        assert "infra" in runs_table.split("acme/infra", 1)[1]  # the project column, after the repo
        assert page.inner_text("h2:has-text('Recent runs') + table .state-failure").strip() == "failure"
        queues = page.inner_text("h2:has-text('Queues') + table")
        assert "plangate-plans" in queues and "plangate-commands" in queues
        assert "running" in page.inner_text("h2:has-text('Workers') + p")  # a signed-in person sees a count
        (comment,) = gh.comments_on(repo, pr.number)
        comment_url = f"{gh.base_url}/{repo.full_name}/pull/{pr.number}#issuecomment-{comment.id}"
        assert page.get_attribute("a:has-text('comment')", "href") == comment_url  # the plan comment itself
        # The CSP's style hash matches the page's own stylesheet: the gate states are coloured, not unstyled.
        color = page.eval_on_selector(
            "h2:has-text('Recent runs') + table .state-failure", "e => getComputedStyle(e).color"
        )
        assert color == "rgb(207, 34, 46)"
        assert row.locator(".state-pending").evaluate("e => getComputedStyle(e).color") == "rgb(154, 103, 0)"
        assert not [m for m in csp_reports if "Content Security Policy" in m]

        shot = tmp_path / "status.png"
        page.screenshot(path=str(shot), full_page=True)
        data = shot.read_bytes()
        assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 1000
        context.close()

        record_run(redis_conn, kind="plan", repo=HOSTILE, number=1, project=HOSTILE, sha="f" * 40, summary=HOSTILE)
        scripted = browser.new_context(extra_http_headers={"Authorization": f"Bearer {TOKEN}"})
        page = scripted.new_page()
        dialogs: list[str] = []
        page.on("dialog", lambda dialog: dialogs.append(dialog.message))
        page.goto(stack.web_url + "/")
        assert HOSTILE in page.inner_text("body")  # the token sees every repository
        assert page.inner_text("h2:has-text('Workers') + table").count("plangate-") >= 1
        assert page.evaluate("window.pwned") is None and not dialogs
        assert page.locator("script").count() == 0 and page.locator("img").count() == 0
        scripted.close()
