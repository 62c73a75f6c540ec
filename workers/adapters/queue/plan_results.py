"""What a PR's publish reads: the results RQ keeps of the jobs that planned its projects (a lone
project's job, a dispatch that planned in place, a batch and the jobs it handed busy projects to), and
of the jobs that hold the plans it carries forward. A job that failed for good made failed plans,
never lost ones."""

from __future__ import annotations

from collections.abc import Sequence

import redis
from rq.exceptions import NoSuchJobError
from rq.job import Job, JobStatus

from core.contract import Jobs, PlanRequest
from core.projects import Project
from core.render.lost import OUTAGE
from core.results import BatchResult, ProjectResult
from plumbing.job_options import GAVE_UP
from workers.adapters.queue import fanout
from workers.adapters.terraform import pipeline

PlanJob = Job  # a job that planned projects (or a dispatch that planned in place), as RQ keeps it


def finished(conn: redis.Redis, job_id: str) -> bool:
    """Did job `job_id` finish (a fallback publish reports only for a planner that did not)?"""
    return Job.fetch(job_id, connection=conn).get_status() == JobStatus.FINISHED


def fetch_jobs(conn: redis.Redis, job_ids: list[str]) -> list[Job]:
    """The plan jobs `job_ids`, read once for everything a publish asks of them (a job keeps its result
    once loaded); NoSuchJobError if one is gone."""
    jobs = Job.fetch_many(job_ids, connection=conn)
    for job_id, job in zip(job_ids, jobs, strict=True):
        if job is None:
            raise NoSuchJobError(f"No such job: {job_id}")
    return [job for job in jobs if job is not None]


def results_of(job: Job, request: PlanRequest, project: Project | None = None) -> list[tuple[str, ProjectResult]]:
    """Each result of plan job `job`, with the id of the job that made it. `project`: what the job
    planned, when its arguments do not say (a dispatch that planned in place)."""
    projects = job.kwargs["projects"] if "projects" in job.kwargs else [project or job.kwargs["project"]]
    return _made_by(job, request, projects)


def _made_by(job: Job, request: PlanRequest, projects: list[Project]) -> list[tuple[str, ProjectResult]]:
    """`projects`' results from plan job `job`, each with the id of the job that made it (a batch hands
    a busy project to a job of its own); a job that failed (its worker died on every try) made failed
    plans, not lost ones."""
    value = job.return_value() if job.get_status(refresh=False) == JobStatus.FINISHED else None
    made: list[tuple[str, ProjectResult]] = []
    for project in projects:
        if isinstance(value, ProjectResult):
            made.append((job.id, value))
        elif isinstance(value, BatchResult) and project.identity in value.results:
            made.append((job.id, value.results[project.identity]))
        elif isinstance(value, BatchResult) and project.identity in value.delegated:
            delegate = Job.fetch(value.delegated[project.identity], connection=job.connection)
            made += _made_by(delegate, request, [project])
        else:
            made.append((job.id, _died(job, request, project)))
    return made


def _died(job: Job, request: PlanRequest, project: Project) -> ProjectResult:
    if job.meta.get(GAVE_UP) == OUTAGE:
        why = "GitHub could not be reached for the whole outage window (PLANGATE_OUTAGE_WINDOW); comment /plan"
        return pipeline.failure(project, request.sha, why)
    failure = job.latest_result()
    detail = (failure.exc_string or "").strip().splitlines()[-1:] if failure else []
    why = "the plan job died: " + (detail[0] if detail else str(job.get_status()))
    return pipeline.failure(project, request.sha, why)


def still_to_come(jobs: list[Job]) -> list[str]:
    """The jobs that batches among `jobs` handed a busy project to, and that have not ended yet."""
    waiting: list[str] = []
    for job in jobs:
        if job.func_name != Jobs.PLAN_PROJECTS or job.get_status(refresh=False) != JobStatus.FINISHED:
            continue
        value = job.return_value()
        if isinstance(value, BatchResult):
            waiting += [i for i in value.delegated.values() if fanout.not_ended(job.connection, i)]
    return waiting


def still_held(conn: redis.Redis, job_ids: Sequence[str]) -> list[bool]:
    """Does RQ still hold each job of `job_ids` (a result outlives its job's TTL never), in one round trip?"""
    pipe = conn.pipeline(transaction=False)
    for one in job_ids:
        pipe.exists(Job.key_for(one))
    return [bool(held) for held in pipe.execute()]


def held_results(
    conn: redis.Redis, request: PlanRequest, wanted: Sequence[tuple[str, Project]]
) -> dict[tuple[str, str], ProjectResult]:
    """The results of earlier plan jobs, (job id, project) → result by (job id, project identity); each
    job read once (a batch holds many), a job RQ no longer holds left out."""
    ids = list(dict.fromkeys(held for held, _ in wanted))
    found: dict[tuple[str, str], ProjectResult] = {}
    for held, job in zip(ids, Job.fetch_many(ids, connection=conn), strict=True):
        if job is not None:
            mine = [project for one, project in wanted if one == held]
            for project, (_, result) in zip(mine, _made_by(job, request, mine), strict=True):
                found[held, project.identity] = result
    return found
