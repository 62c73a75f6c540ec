"""`check_run` webhook payloads shaped like GitHub's (tests/fixtures/github/webhooks/schemas)."""

from __future__ import annotations

from standin import check_shapes, payloads
from standin.checks import CheckRun
from standin.shapes import Json
from standin.state import Repo, State, User


def check_run(
    state: State,
    repo: Repo,
    run: CheckRun,
    action: str,
    sender: User,
    base: str,
    identifier: str | None = None,
) -> Json:
    """created | completed | rerequested | requested_action (with the pressed button's `identifier`)."""
    shown = check_shapes.run(state, run, repo, base)
    shown["check_suite"] = check_shapes.suite(state, state.check_suites[run.suite_id], repo, base)
    payload: Json = {"action": action, "check_run": shown}
    if identifier is not None:
        payload["requested_action"] = {"identifier": identifier}
    return {**payload, **payloads._common(state, repo, sender, base)}
