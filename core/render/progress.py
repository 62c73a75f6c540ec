"""The PR's plan comment while a multi-project plan runs: how many projects are done, which still run,
each linked to its live run page (pure: data in, markdown out).

The body heads the same comment the plan later fills, so it carries the `plangate:plan` marker of part
1 (vcs.upsert_comments finds the comment by it), flagged `progress`: no reader takes it for a plan.
It holds no approval marker and no plan: nothing in it can be approved.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from core.render.marker import marker
from core.render.mask import Masker
from core.render.run_links import run_url
from core.render.text import code
from core.runs import run_id

MAX_LISTED = 30  # projects still running named one by one; the rest are counted
MAX_LABEL = 200


def run_page(public_url: str | None, job_id: str | None, identity: str) -> str | None:
    """The run page of project `identity` planned by job `job_id`, when plangate has a public URL."""
    return run_url(public_url, run_id(job_id, identity)) if job_id else None


def render_progress(
    *,
    pr: int,
    sha: str,
    projects: Mapping[str, str],
    done: Collection[str],
    jobs: Mapping[str, str],
    public_url: str | None,
    mask_patterns: Sequence[str] = (),
) -> str:
    """The comment body: `projects` (identity → label, in the order they are planned), the identities
    `done` (planned or failed; others are ignored), `jobs` (identity → the RQ job planning it), and run
    pages linked only when `public_url` is set. Labels are masked with `mask_patterns` and shown as code."""
    m = Masker((), mask_patterns)
    total = len(projects)
    finished = sum(1 for identity in projects if identity in done)
    running = [identity for identity in projects if identity not in done]
    noun = "project" if total == 1 else "projects"
    lines = [
        f"## plangate is planning {code(sha[:7])}",
        "",
        f"Planning {total} {noun} at {code(sha[:7])}: {finished} of {total} done.",
    ]
    if running:
        lines += ["", "Still planning:"]
        for identity in running[:MAX_LISTED]:
            label = code(m(projects[identity]), MAX_LABEL)
            page = run_page(public_url, jobs.get(identity), identity)
            lines.append(f"- [{label}]({page}) (live output)" if page else f"- {label}")
        if len(running) > MAX_LISTED:
            lines.append(f"- … and {len(running) - MAX_LISTED} more")
    lines += ["", "_The full plan replaces this comment once every project is planned._"]
    head = marker("plan", parts=1, part=1, pr=pr, sha=sha, progress=True)
    return head + "\n" + m("\n".join(lines)) + "\n"
