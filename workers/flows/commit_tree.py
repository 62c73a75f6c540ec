"""Where a PR's plan reads the commit's files from: the host's shared read-only tree of the commit
when plans run sandboxed (adapters/trees.py: the dispatch checks it out, each project's plan reuses
it), else a private checkout per job, as without a sandbox a plan could change a shared tree."""

from __future__ import annotations

import contextlib
from pathlib import Path

from core.contract import PlanRequest
from core.projects import Project
from workers.adapters.checkout import checkout, job_workdir, object_cache
from workers.adapters.terraform import pipeline
from workers.adapters.terraform.pipeline import CHECKOUT_TIMEOUT
from workers.adapters.terraform.steps import Terraform
from workers.adapters.trees import shared_tree
from workers.context import WorkerContext


def for_discovery(ctx: WorkerContext, req: PlanRequest, code: str, token: str, held: contextlib.ExitStack) -> Path:
    """The files of commit `code`, kept until `held` closes (blocking: run it in a thread)."""
    cache = object_cache(ctx.checkouts, req.repo_id)
    if ctx.sandbox.enabled:
        tree = shared_tree(ctx.trees, req.repo_id, code, req.clone_url, token, timeout=CHECKOUT_TIMEOUT, cache=cache)
        return held.enter_context(tree)
    work = held.enter_context(job_workdir(ctx.checkouts, req.repo_id, f"pr-{req.pr}", req.sha, "_discovery"))
    checkout(req.clone_url, code, work, token, timeout=CHECKOUT_TIMEOUT, cache=cache)
    return work


def plan(
    ctx: WorkerContext, req: PlanRequest, project: Project, tf: Terraform, scope: str, code: str, token: str
) -> pipeline.SavedPlan:
    """One project's plan of commit `code` (blocking: run it in a thread)."""
    if not ctx.sandbox.enabled:
        with pipeline.checked_out(ctx.checkouts, req.repo_id, scope, code, project.name, req.clone_url, token) as dirs:
            return pipeline.plan(tf, project, dirs)
    cache = object_cache(ctx.checkouts, req.repo_id)
    with (
        shared_tree(ctx.trees, req.repo_id, code, req.clone_url, token, timeout=CHECKOUT_TIMEOUT, cache=cache) as tree,
        pipeline.on_shared_tree(ctx.checkouts, tree, req.repo_id, scope, code, project.name) as dirs,
    ):
        return pipeline.plan(tf, project, dirs)
