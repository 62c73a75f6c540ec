"""What every job in one worker process shares: settings, Redis, the token cache, terraform's env."""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import redis

from bot import settings as settings_module
from bot.settings import Settings
from workers.github import TokenCache
from workers.runner import Terraform
from workers.tfenv import build_env, detect_tool


@dataclass(frozen=True)
class WorkerContext:
    settings: Settings
    redis: redis.Redis
    tokens: TokenCache

    @property
    def app_id(self) -> int:
        assert self.settings.app_id is not None
        return self.settings.app_id

    @property
    def private_key(self) -> str:
        assert self.settings.private_key is not None
        return self.settings.private_key

    def terraform(self, preferred_tool: str | None) -> Terraform:
        """A runner for one project: tofu or terraform, clean env, the configured timeout and memory cap."""
        home = self.settings.workdir / "home"
        cache_dir = self.settings.workdir / "plugin-cache"
        home.mkdir(parents=True, exist_ok=True)
        cache_dir.mkdir(parents=True, exist_ok=True)
        env = build_env(
            passthrough=list(self.settings.tf_env), source_env=os.environ, home=home, plugin_cache=cache_dir
        )
        return Terraform(
            tool=detect_tool(preferred_tool, path=env["PATH"]),
            env=env,
            timeout=self.settings.tf_timeout,
            memory_limit_bytes=self.settings.tf_memory_mb * 1024 * 1024,
            init_lock=cache_dir / ".plangate-init.lock",
        )

    @property
    def checkouts(self) -> Path:
        return self.settings.workdir / "checkouts"


@cache
def context() -> WorkerContext:
    """Built once per process (RQ's work horse) from the environment."""
    loaded = settings_module.load(need_app=True)
    conn = redis.Redis.from_url(loaded.redis_url)
    assert loaded.app_id is not None and loaded.private_key is not None
    tokens = TokenCache(conn, app_id=loaded.app_id, private_key=loaded.private_key, api_url=loaded.api_url)
    return WorkerContext(settings=loaded, redis=conn, tokens=tokens)
