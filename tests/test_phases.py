"""WorkerContext.terraform: each phase gets its own credentials, and PR code its own plugin cache."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis

from core.sandbox_paths import Grant
from plumbing import settings as settings_module
from plumbing.records import Records
from tests.keys import rsa_pem
from workers.adapters.github.auth import TokenCache
from workers.adapters.terraform.sandbox import Sandbox
from workers.context import WorkerContext


def test_plan_and_apply_credentials_and_caches_are_kept_apart(
    tmp_path: Path, redis_conn: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in {"AWS_RO_KEY": "ro", "AWS_RW_KEY": "rw", "AWS_REGION": "eu"}.items():
        monkeypatch.setenv(name, value)
    loaded = settings_module.load(
        {
            "PLANGATE_WORKDIR": str(tmp_path),
            "PLANGATE_TF_ENV": "AWS_REGION",
            "PLANGATE_TF_ENV_PLAN": "AWS_RO_*",
            "PLANGATE_TF_ENV_APPLY": "AWS_RW_*",
        }
    )
    key = rsa_pem()
    ctx = WorkerContext(
        loaded, redis_conn, TokenCache(redis_conn, app_id=1, private_key=key, api_url="http://x"),
        Records(redis_conn, key), Sandbox(),
    )  # fmt: skip
    plan, drift, apply = (ctx.terraform("terraform", p) for p in ("plan", "drift", "apply"))
    assert {k: plan.env[k] for k in ("AWS_REGION", "AWS_RO_KEY")} == {"AWS_REGION": "eu", "AWS_RO_KEY": "ro"}
    assert "AWS_RW_KEY" not in plan.env and "AWS_RW_KEY" not in drift.env
    assert apply.env["AWS_RW_KEY"] == "rw" and "AWS_RO_KEY" not in apply.env
    assert plan.plugin_cache != apply.plugin_cache and drift.plugin_cache == apply.plugin_cache
    assert not {plan.plugin_cache, apply.plugin_cache} & {*plan.writable, *apply.writable}  # an init's turn opens it
    assert plan.env["TF_PLUGIN_CACHE_DIR"].endswith("untrusted")
    for tf in (plan, drift, apply):  # a plan's code holding the lock would stall every init on the host
        assert tf.init_lock is not None
        assert not any(tf.init_lock.is_relative_to(shown) for shown in (*tf.writable, *tf.readable))
    assert plan.init_lock != apply.init_lock


def test_each_phase_sees_its_own_grants_and_only_the_apply_takes_the_state_lock(
    tmp_path: Path, redis_conn: redis.Redis, sandbox: Sandbox
) -> None:
    state, scratch, deploy = tmp_path / "state", tmp_path / "scratch", tmp_path / "deploy"
    loaded = settings_module.load(
        {
            "PLANGATE_WORKDIR": str(tmp_path / "work"),
            "PLANGATE_SANDBOX_PATHS": f"{state}:rw",  # the old README example
            "PLANGATE_SANDBOX_PATHS_PLAN": f"{scratch}:rw",
            "PLANGATE_SANDBOX_PATHS_APPLY": f"{deploy}:rw",
        }
    )
    key = rsa_pem()
    ctx = WorkerContext(
        loaded, redis_conn, TokenCache(redis_conn, app_id=1, private_key=key, api_url="http://x"),
        Records(redis_conn, key), sandbox,
    )  # fmt: skip
    plan, drift, apply = (ctx.terraform("terraform", p) for p in ("plan", "drift", "apply"))
    for tf in (plan, drift):
        assert tf.sandbox.grants == (Grant(state), Grant(scratch, writable=True)) and not tf.lock_state
    assert apply.sandbox.grants == (Grant(state, writable=True), Grant(deploy, writable=True)) and apply.lock_state
    argv = plan.sandbox.wrap(["/usr/bin/true"], cwd=tmp_path)
    assert argv[argv.index(str(state)) - 1] == "--ro-bind" and str(deploy) not in argv
    assert apply.sandbox.wrap(["/usr/bin/true"], cwd=tmp_path).count("--bind") == 2
