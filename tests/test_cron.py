"""`plangate cron` starts RQ's cron scheduler with plangate's schedules and learns the drift targets at once."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import redis
from rq import Queue

from core.contract import PLANS_QUEUE, Jobs
from tests.keys import rsa_pem


def test_cron_registers_its_jobs_and_refreshes_targets(tmp_path: Path, redis_url: str, redis_conn: redis.Redis) -> None:
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "GITHUB_APP_ID": "1",
        "GITHUB_APP_PRIVATE_KEY": rsa_pem(),
        "REDIS_URL": redis_url,
    }
    proc = subprocess.Popen([sys.executable, "-m", "plangate", "cron"], env=env, stderr=subprocess.PIPE, text=True)
    try:
        queue = Queue(PLANS_QUEUE, connection=redis_conn)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not queue.job_ids:
            time.sleep(0.1)
        funcs = {job.func_name for job in queue.jobs}
        assert Jobs.REFRESH_DRIFT_TARGETS in funcs
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    for registered in (
        "'workers.jobs.drift_tick' to run on plangate-plans with cron schedule '* * * * *'",
        "'workers.jobs.refresh_drift_targets' to run on plangate-plans",
        "'workers.maintenance.sweep_workdirs' to run on plangate-plans",
    ):
        assert registered in err, err[-2000:]
