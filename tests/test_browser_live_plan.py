"""A long plan watched in a real headless Chromium, the whole stack real: a PR's plan prints a line a second
(a terraform wrapper writing to stderr before it plans, as a slow data source would), its run page shows the
lines while the plan still runs, the live stream is cut every 2 s (PLANGATE_RUN_STREAM_SECONDS) so the browser
reconnects several times, and no line is shown twice; when the plan ends the page shows it whole."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
import redis
from playwright.sync_api import Browser, Page, expect

from standin.stack import running_stack
from tests.e2e import applied_state, planned
from tests.test_browser import TOKEN
from tests.test_e2e_runs import CONFIG, _runs, _store
from tests.tfproject import main_tf, tool

pytestmark = pytest.mark.e2e
LINES = 12
# terraform, except that `plan` first prints a line a second (as a slow data source would make it wait).
LONG_PLAN = """#!/bin/sh
if [ "$1" = "plan" ]; then
  for i in $(seq {lines}); do echo "reading $i tok-77$i" >&2; sleep 1; done
fi
exec {real} "$@"
"""


def _readings(page: Page) -> list[int]:
    return [int(n) for n in re.findall(r"reading (\d+)", page.inner_text("body"))]


def test_a_long_plans_lines_show_live_once_each_across_reconnects(
    tmp_path: Path, redis_url: str, redis_conn: redis.Redis, browser: Browser
) -> None:
    state = applied_state(tmp_path)
    wrapper = tmp_path / "bin" / "terraform"
    wrapper.parent.mkdir()
    wrapper.write_text(LONG_PLAN.format(lines=LINES, real=tool()))
    wrapper.chmod(0o755)
    env = {
        "PATH": f"{wrapper.parent}:{os.environ['PATH']}",
        "PLANGATE_STATUS_TOKEN": TOKEN,
        "PLANGATE_RUN_STREAM_SECONDS": "2",
    }
    with running_stack(tmp_path, redis_url, extra_env=env) as stack:
        gh, store = stack.gh, _store(stack, redis_conn)
        files = {"infra/main.tf": main_tf(state, {"keep": "a", "doomed": "b"}), ".plangate.yml": CONFIG}
        repo = gh.create_repo("acme", "infra", files)
        gh.set_permission(repo, "alice", "write")
        pr = gh.open_pr(repo, "slow", "alice", "Slow", {"infra/main.tf": main_tf(state, {"keep": "a2", "doomed": "b"})})
        (running,) = _runs(stack, store, repo, pr.head_sha, "plan", ended=False)

        context = browser.new_context(extra_http_headers={"Authorization": f"Bearer {TOKEN}"})
        errors: list[str] = []
        page = context.new_page()
        loads: list[int] = []
        streams: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("load", lambda _: loads.append(1))
        page.on("request", lambda r: streams.append(r.url) if "/events" in r.url else None)
        page.goto(f"{stack.web_url}/runs/{running.id}")
        first = _readings(page)
        assert len(first) < LINES  # opened while the plan prints
        expect(page.locator("body")).to_contain_text(f"reading {len(first) + 2}", timeout=60_000)
        assert len(loads) == 1  # more lines shown by the stream, not by a reload
        while (head := store.head(running.id)) is not None and head.running:  # to its end, across reconnects
            seen = _readings(page)
            assert seen == sorted(set(seen)), seen  # in order, each once
            page.wait_for_timeout(100)
        assert len(streams) >= 2, streams  # the stream was cut at least once and the browser came back
        assert "tok-77" not in page.content()  # masked line by line
        planned(stack, repo, pr.head_sha)
        expect(page.locator("body")).to_contain_text("Plan: 0 to add, 1 to change", timeout=60_000)
        assert _readings(page) == list(range(1, LINES + 1))
        assert not [e for e in errors if "Content Security Policy" in e]
        context.close()
