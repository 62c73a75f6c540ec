"""Links to run pages (pure): the URL of a run's page, its Markdown, and which run a commit's report
points at.

Only two things go into a link: the operator's PLANGATE_PUBLIC_URL (checked at start-up to be a plain
http(s) URL, plumbing.settings) and a run id (core.runs.valid_id: 24 URL-safe characters). Nothing a PR
can write (a project's name, a directory) is ever part of one, so no name can break or redirect it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from core.runs import valid_id

LINK_TEXT = "run page"


def run_url(public_url: str | None, run: str | None) -> str | None:
    """`{public_url}/runs/{run}`; None without a public URL (no links then) or with no valid run id."""
    if not public_url or run is None or not valid_id(run):
        return None
    return f"{public_url.rstrip('/')}/runs/{run}"


def run_urls(public_url: str | None, runs: Mapping[str, str]) -> dict[str, str]:
    """identity → its run page's URL, for every run that has one."""
    return {identity: url for identity, run in runs.items() if (url := run_url(public_url, run)) is not None}


def run_link(url: str) -> str:
    """The Markdown link to a run page (the URL is plangate's own, never text a PR wrote)."""
    return f"[{LINK_TEXT}]({url})"


def reported_run(
    identities: Sequence[str], runs: Mapping[str, str], *, blocked: Collection[str], failed: Collection[str]
) -> str | None:
    """The run a commit's plan report links to: its one project's; of several, the first that is blocked
    (gated changes not yet approved), else the first that failed, else the first (the page lists its
    siblings). Only projects with a run count; None when none has one."""
    known = [identity for identity in identities if identity in runs]
    for wanted in (blocked, failed):
        for identity in known:
            if identity in wanted:
                return runs[identity]
    return runs[known[0]] if known else None
