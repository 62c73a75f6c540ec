"""plangate's three contexts as check runs: `plangate/plan`, `plangate/destroy`, `plangate/apply`.

A check run carries a Markdown summary (the plan summary and every destroy, within GitHub's 65,535
characters), GitHub's "Re-run" button (`check_run.rerequested`: a re-plan), and on `plangate/destroy`
an "Approve destroys" button of the App's own (`requested_action`). One run per (commit, context) is
kept and edited in place (its id is remembered, sealed, in Redis). Where an installation lacks
`checks: write` (or `PLANGATE_REPORT=statuses`), the same reports go out as commit statuses.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

from gidgethub import BadRequest
from gidgethub.abc import GitHubAPI

from core import redis_keys
from plumbing.records import Records

MODES = ("checks", "statuses")
APPROVE_PREFIX = "approve-"  # + the plan's digest, cut to GitHub's 20 characters: a stale page approves nothing


def approve_action(plan_digest: str) -> dict[str, str]:
    """The "Approve destroys" button for the plan whose digest is `plan_digest` (core.gated.published_digest)."""
    return {
        "label": "Approve destroys",  # GitHub: at most 20 characters
        "description": "Approve exactly these destroys",  # at most 40
        "identifier": (APPROVE_PREFIX + plan_digest)[:20],  # at most 20
    }


MAX_TEXT = 65_535
TTL = redis_keys.GATE_TTL
log = logging.getLogger("plangate.checks")


def conclusion(state: str, needs_approval: bool) -> str:
    """GitHub's conclusion for a finished state; destroys awaiting an approval ask for an action."""
    if state == "success":
        return "success"
    return "action_required" if needs_approval else "failure"


def fit(text: str) -> str:
    """GitHub refuses a check run text over 65,535 characters or UTF-8 bytes with a 422: cut first, say so."""
    data = text.encode()
    if len(data) <= MAX_TEXT:
        return text
    note = "\n\n_(cut to fit GitHub's limit; the plan comment holds the rest)_"
    return data[: MAX_TEXT - len(note.encode())].decode(errors="ignore") + note


@dataclass
class CheckRuns:
    """How one installation's reports go out (set on its client, see workers.adapters.github.auth)."""

    records: Records
    mode: str = "checks"

    def _key(self, repo: str, sha: str) -> str:
        return redis_keys.check_runs(repo, sha)

    async def report(
        self,
        gh: GitHubAPI,
        repo: str,
        sha: str,
        context: str,
        state: str,
        description: str,
        url: str | None,
        *,
        summary: str | None = None,
        approve: str | None = None,
    ) -> bool:
        """Create or edit the check run; False when this installation cannot (report a status instead)."""
        if self.mode != "checks":
            return False
        key = self._key(repo, sha)
        known: dict[str, Any] = self.records.get_json(key) or {}
        body: dict[str, Any] = {
            "name": context,
            "output": {"title": description, "summary": fit(summary or description)},
            "actions": [approve_action(approve)] if approve else [],
        }
        if url:
            body["details_url"] = url
        if state == "pending":
            body["status"] = "in_progress"
        else:
            body["status"] = "completed"
            body["conclusion"] = conclusion(state, approve is not None)
        try:
            if context in known:
                path = f"/repos/{repo}/check-runs/{known[context]}"
                if summary is None:  # a new state, same plan: keep the summary the run already shows
                    shown = (await gh.getitem(path)).get("output") or {}
                    body["output"]["summary"] = fit(shown.get("summary") or description)
                await gh.patch(path, data=body)
                return True
            run = await gh.post(f"/repos/{repo}/check-runs", data={**body, "head_sha": sha})
        except BadRequest as exc:
            if exc.status_code.value == 403:  # no `checks: write` on this installation
                log.warning(json.dumps({"repo": repo, "checks": "not permitted: reporting a status instead"}))
                return False
            if exc.status_code.value == 404 and context in known:
                self._remember(key, context, None)
                again = self.report(gh, repo, sha, context, state, description, url, summary=summary, approve=approve)
                return await again
            raise
        self._remember(key, context, int(run["id"]))
        return True

    def _remember(self, key: str, context: str, run_id: int | None) -> None:
        """Record (or forget) one context's run, read afresh: reports of a commit's other contexts may
        have gone out meanwhile (publish sends them together), and each keeps its own."""
        known: dict[str, Any] = self.records.get_json(key) or {}
        if run_id is None:
            known.pop(context, None)
        else:
            known[context] = run_id
        self.records.set(key, json.dumps(known), ex=TTL)
