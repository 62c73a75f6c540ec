"""`plangate`: the one console script, and the only module that starts any of plangate's processes.

`web` runs bot/ (the webhook server), `worker` and `cron` run workers/ (the jobs), `gate` gives the
gate's verdict on one plan (plumbing/gate_cli.py). The demo is the GitHub stand-in's
(`python -m standin.demo`, `make demo`): the product never imports the stand-in.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import logging
import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from plumbing.settings import Settings

# plangate's packages have generic top-level names; these are the ones that must be its own.
OWN_PACKAGES = ("bot", "workers", "plumbing", "core")
HOME = Path(__file__).resolve().parent


def foreign_packages(found: Mapping[str, list[str]], home: Path) -> list[str]:
    """Why `bot`, `workers` or `core` may not be plangate's own here: empty when all three are.

    Another distribution shipping one of these names (found: import name → distributions) would
    overwrite or shadow plangate's code; a copy outside plangate's directory would shadow it.
    """
    problems = []
    for name in OWN_PACKAGES:
        others = sorted(set(found.get(name, [])) - {"plangate"})
        if others:
            problems.append(f"'{name}' is also installed by {', '.join(others)}")
        spec = importlib.util.find_spec(name)
        origin = Path(spec.origin).resolve().parent.parent if spec and spec.origin else None
        if origin != home:
            problems.append(f"'{name}' is imported from {origin or 'nowhere'}, not from {home}")
    return problems


def _own_packages_or_stop() -> None:
    problems = foreign_packages(importlib.metadata.packages_distributions(), HOME)
    if problems:
        _stop("; ".join(problems) + ": install plangate in a virtualenv of its own")


def _settings(*, need_webhook: bool = False, need_app: bool = False, need_redis_password: bool = False) -> Settings:
    from plumbing import settings as settings_module
    from plumbing.setting_values import SettingsError

    try:
        return settings_module.load(
            need_webhook=need_webhook, need_app=need_app, need_redis_password=need_redis_password
        )
    except SettingsError as exc:
        _stop(str(exc))


def _stop(line: str) -> NoReturn:
    print(f"plangate: {line}", file=sys.stderr)
    raise SystemExit(2)


def _logging(settings: Settings) -> None:
    level = logging.getLevelNamesMapping()[settings.log_level.upper()]
    logging.basicConfig(level=level, format="%(asctime)s %(name)s %(levelname)s %(message)s", stream=sys.stderr)


def cmd_web(args: argparse.Namespace) -> int:
    import uvicorn

    from bot.app import create_app, create_setup_app
    from bot.setup import setup_active
    from plumbing.settings import forget_secrets

    settings = _settings()
    _logging(settings)
    if setup_active(settings):
        logging.getLogger("plangate").warning("no GitHub App configured: serving only /setup and /healthz")
        app = create_setup_app(settings)
    else:
        app = create_app(_settings(need_webhook=True))
    forget_secrets(os.environ)
    # No `server: uvicorn` header: one header less to build per webhook, and nothing to fingerprint.
    uvicorn.run(app, host=args.host, port=args.port, access_log=False, log_level="warning", server_header=False)
    return 0


def cmd_worker(args: argparse.Namespace) -> int:
    import redis

    from core.contract import QUEUE_NAMES
    from plumbing.redis_client import connect
    from plumbing.settings import forget_secrets
    from workers.rq_worker import PlangateWorker, preload

    settings = _settings(need_app=True, need_redis_password=True)
    _logging(settings)
    import workers.jobs  # noqa: F401  (loaded once here, so each forked work horse starts warm)

    preload()
    from workers.adapters.github.auth import app_jwt, tls_context
    from workers.adapters.terraform.sandbox import SandboxError
    from workers.context import context

    try:
        ctx = context()  # settings, sealed records and the probed sandbox, inherited by every work horse
    except SandboxError as exc:
        _stop(str(exc))
    forget_secrets(os.environ)  # no child (git, bwrap, terraform) can inherit them now
    tls_context()
    app_jwt(ctx.app_id, ctx.private_key)  # parses the key once, before the forks
    log = logging.getLogger("plangate.worker")
    if ctx.sandbox.enabled:
        log.info("sandbox: %s", ctx.described())
    else:
        log.warning("!!! SANDBOX OFF: terraform runs the pull request's code with this worker's view of the host")
    log.info("terraform: %s", ctx.memory_cap.describe(settings.tf_memory_mb))
    conn = connect(settings.redis_url)
    wait = 1.0
    while True:  # Redis down at start-up or later: reconnect with backoff, no restart needed
        try:
            ctx.record_sandbox()
            worker = PlangateWorker(list(QUEUE_NAMES), connection=conn)
            worker.work(burst=args.burst, logging_level="INFO", with_scheduler=True)  # runs jittered drift checks
            return 0
        except (redis.ConnectionError, redis.TimeoutError) as exc:
            log.error("Redis unreachable (%s); retrying in %.0fs", exc, wait)
            time.sleep(wait)
            wait = min(wait * 2, 60.0)


def cmd_cron(args: argparse.Namespace) -> int:
    import redis
    from rq import Queue
    from rq.cron import CronScheduler

    from core.contract import PLANS_QUEUE, Jobs
    from plumbing.job_options import OPTIONS
    from plumbing.redis_client import connect
    from plumbing.settings import forget_secrets
    from workers import maintenance

    settings = _settings(need_app=True)
    _logging(settings)
    from workers import jobs

    conn = connect(settings.redis_url)
    forget_secrets(os.environ)
    wait = 1.0
    while True:  # Redis restarts: reconnect with backoff and carry on, no process restart needed
        try:
            scheduler = CronScheduler(connection=conn, logging_level="INFO")
            scheduler.register(maintenance.sweep_workdirs, PLANS_QUEUE, cron="17 * * * *", name="sweep-workdirs")
            scheduler.register(jobs.refresh_drift_targets, PLANS_QUEUE, cron="7 * * * *", name="drift-targets")
            scheduler.register(jobs.drift_tick, PLANS_QUEUE, cron="* * * * *", name="drift-tick")
            refresh = OPTIONS[Jobs.REFRESH_DRIFT_TARGETS].enqueue_args()
            Queue(PLANS_QUEUE, connection=conn).enqueue(jobs.refresh_drift_targets, **refresh)  # know the targets now
            scheduler.start()  # type: ignore[no-untyped-call]
            return 0
        except (redis.ConnectionError, redis.TimeoutError) as exc:
            logging.getLogger("plangate.cron").error("Redis unreachable (%s); retrying in %.0fs", exc, wait)
            time.sleep(wait)
            wait = min(wait * 2, 60.0)


def cmd_oidc_rotate(args: argparse.Namespace) -> int:
    """A new OIDC signing key: published now, signing ACTIVATE_AFTER from now; retired keys deleted."""
    from plumbing.oidc_keys import ACTIVATE_AFTER, OVERLAP, KeyRing

    settings = _settings()
    if settings.oidc is None:
        _stop("setting PLANGATE_OIDC_KEY_DIR: not set, so plangate issues no OIDC tokens and has no key to rotate")
    made = KeyRing(settings.oidc.key_dir).rotate(time.time())
    print(
        f"new OIDC key {made.kid}: published now, signs from {ACTIVATE_AFTER // 60} min from now; "
        f"the previous key stays published {OVERLAP // 60} min after that"
    )
    return 0


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="plangate",
        description="Plan Terraform/OpenTofu on every pull request, apply on merge, "
        "and never destroy without a named human's /approve-destroy.",
    )
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    web = sub.add_parser("web", help="the webhook server (Starlette under uvicorn)")
    web.add_argument("--host", default="0.0.0.0", help="address to listen on (default 0.0.0.0)")
    web.add_argument("--port", type=int, default=8000, help="port to listen on (default 8000)")
    web.set_defaults(func=cmd_web)
    worker = sub.add_parser("worker", help="an RQ worker running plans, gates and applies")
    worker.add_argument("--burst", action="store_true", help="exit when the queues are empty")
    worker.set_defaults(func=cmd_worker)
    cron = sub.add_parser("cron", help="the RQ cron scheduler (drift checks, workdir sweeps)")
    cron.set_defaults(func=cmd_cron)
    from plumbing.gate_cli import configure, run

    gate = configure(sub.add_parser("gate", help="the gate's verdict on one `show -json` plan, no GitHub needed"))
    gate.set_defaults(func=run)
    rotate = sub.add_parser("oidc-rotate", help="make a new OIDC signing key (the old one stays published a while)")
    rotate.set_defaults(func=cmd_oidc_rotate)
    return top


def main(argv: list[str] | None = None) -> int:
    _own_packages_or_stop()
    args = parser().parse_args(argv)
    code: int = args.func(args)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
