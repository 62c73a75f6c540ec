"""A PR plan's runs as the gate sees them: which run each published plan is, the gate's verdict written to
each run's page whenever the gate is decided, and the run page a commit's reports link to.

A run page only shows the gate: nothing here feeds a gate decision, and what is written is the verdict
just reported to GitHub (the sealed records of plumbing.run_store keep a plan's code from rewriting it).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence

from core.approvals import Coverage
from core.gated import Gated, Gates
from core.render.mask import Masker
from core.render.run_links import reported_run, run_url
from core.results import ProjectResult
from core.run_gate import run_gates
from core.runs import run_id
from plumbing.records import Records
from workers.adapters.store import run_gates as run_gates_store
from workers.flows.apply_approvals import Standing


def run_ids(made: Mapping[str, tuple[str, str]] | None, identities: Iterable[str]) -> dict[str, str]:
    """identity → the run that made its plan (`made`: identity → (job id, SHA planned at), a carried plan's
    the earlier job's), for each of `identities` whose job is known."""
    made = made or {}
    return {identity: run_id(made[identity][0], identity) for identity in identities if identity in made}


def mask_like_the_comment(
    records: Records, runs: Mapping[str, str], results: Sequence[ProjectResult], patterns: Sequence[str]
) -> None:
    """The comment masks each project with every project's sensitive values; each run drew its plan
    knowing only its own, so the runs' plans are masked again with all of them (nothing to do for one)."""
    secrets = [s for r in results for s in r.secrets]
    if len(results) > 1 and secrets:
        run_gates_store.mask_plans(records, runs.values(), Masker(secrets, patterns))


def write_gates(
    records: Records,
    runs: Mapping[str, str],
    gates: Gates,
    coverage: Coverage | None,
    status: tuple[str, str],
) -> None:
    """Each run's verdicts under the status just reported (a run whose record has expired is left alone)."""
    if not runs:
        return
    judged = run_gates(gates, coverage, status, at=time.time(), identities=tuple(runs))
    run_gates_store.set_gates(records, {run: judged[identity] for identity, run in runs.items()})


def write_apply_gate(
    records: Records,
    run: str,
    identity: str,
    gates: Mapping[str, Gated],
    approved: Standing,
    status: tuple[str, str],
) -> None:
    """A merge-time apply's run: the gate on its fresh plan (`gates`, the approvals that still stand for
    them) under `status`, plangate/apply's (state, description) for that project."""
    judged = run_gates({identity: gates}, approved.coverage(identity, gates), status, at=time.time())
    run_gates_store.set_gates(records, {run: judged[identity]})


def report_url(
    public_url: str | None,
    identities: list[str],
    runs: Mapping[str, str],
    coverage: Coverage | None,
    failed: Iterable[str],
) -> str | None:
    """The run page `plangate/plan` and `plangate/destroy` link to (core.render.run_links.reported_run);
    None without PLANGATE_PUBLIC_URL or a known run (the reports then link as they always did)."""
    if not public_url:
        return None
    blocked = {identity for identity, _ in coverage.unapproved_pairs} if coverage is not None else set()
    return run_url(public_url, reported_run(identities, runs, blocked=blocked, failed=set(failed)))
