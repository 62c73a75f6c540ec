"""What every job in one worker process shares: settings, Redis, sealed records, tokens, the sandbox and
the memory cap."""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Literal

import redis

from core.config import RepoConfig
from core.oidc_env import credentials_for
from core.projects import Project
from core.sandbox_paths import GRANT_PHASES, GrantPhase
from plumbing import settings as settings_module
from plumbing.oidc_keys import KeyRing
from plumbing.records import Records
from plumbing.redis_client import connect
from plumbing.run_store import RunStore
from plumbing.settings import Settings
from workers.adapters.github.auth import TokenCache
from workers.adapters.terraform.cgroups_probe import MemoryCap
from workers.adapters.terraform.cgroups_probe import probe as probe_memory_cap
from workers.adapters.terraform.env import build_env, detect_tool
from workers.adapters.terraform.oidc_tokens import Grant
from workers.adapters.terraform.sandbox import (
    SANDBOX_KEY_PREFIX,
    SANDBOX_RECORD_TTL,
    Sandbox,
    SandboxError,
    describe,
    prepare,
    shown_by,
)
from workers.adapters.terraform.steps import Terraform
from workers.adapters.terraform.tool_version import cache_is_concurrent

# plan: a PR's code (read-only credentials, its own plugin cache); apply: the merged code (write
# credentials); drift: the default branch's code, planned only.
Phase = Literal["plan", "apply", "drift"]


def grant_phase(phase: Phase) -> GrantPhase:
    """Whose host paths a phase gets: drift checks only plan, so they get a PR plan's read-only view."""
    return "apply" if phase == "apply" else "plan"


@dataclass(frozen=True)
class WorkerContext:
    settings: Settings
    redis: redis.Redis
    tokens: TokenCache
    records: Records
    sandbox: Sandbox  # as probed at start-up, showing no granted path: see `sandbox_for`
    memory_cap: MemoryCap = field(default_factory=MemoryCap)  # per step in a cgroup, or per process: probed at start-up

    @property
    def app_id(self) -> int:
        assert self.settings.app_id is not None
        return self.settings.app_id

    @property
    def private_key(self) -> str:
        assert self.settings.private_key is not None
        return self.settings.private_key

    def terraform(self, preferred_tool: str | None, phase: Phase, *, merged: bool = False) -> Terraform:
        """A runner for one project: tofu or terraform, clean env, the phase's credentials, the sandbox
        showing the phase's host paths.

        A PR's plan gets a plugin cache of its own: its code could leave a provider binary there, which
        must never be what a merge-time apply (with write credentials) or a drift check runs. `merged`:
        the plan a merge's apply will apply, made in the plan phase (the merged code's init and plan
        run before the gate has looked at them, so with the plan's credentials and host paths) but with
        the cache the apply uses. Plans and drift checks write no host path the operator did not grant
        them writable by name, so they plan without the state lock (steps.Terraform.lock_state).
        """
        trust = "untrusted" if phase == "plan" and not merged else "trusted"
        cache_dir = self.settings.workdir / "plugin-cache" / trust
        locks = self.settings.workdir / "locks"  # never inside what the sandbox shows: a plan cannot hold them
        home = self.settings.workdir / "home"
        for made in (home, cache_dir, locks):
            made.mkdir(parents=True, exist_ok=True)
        extra = self.settings.tf_env_apply if phase == "apply" else self.settings.tf_env_plan
        grants_of = grant_phase(phase)
        env = build_env(
            passthrough=[*self.settings.tf_env, *extra],
            source_env=os.environ,
            home=self.sandbox.home(home),
            plugin_cache=cache_dir,
        )
        tool = detect_tool(preferred_tool, path=env["PATH"])
        return Terraform(
            tool=tool,
            env=env,
            timeout=self.settings.tf_timeout,
            memory_limit_bytes=self.settings.tf_memory_mb * 1024 * 1024,
            init_lock=locks / f"plugin-cache-{trust}.lock",
            cache_is_concurrent=cache_is_concurrent(tool, env),  # asked once per process (build)
            plugin_cache=cache_dir,
            sandbox=self.sandbox_for(grants_of),
            cgroups=self.memory_cap.cgroups,
            lock_state=grants_of == "apply",
        )

    def identity(
        self,
        policy: RepoConfig,
        project: Project,
        phase: Phase,
        *,
        repo: str,
        repo_id: int,
        sha: str,
        pr: int | None = None,
        ref: str | None = None,
        approvers: tuple[str, ...] = (),
    ) -> Grant | None:
        """The OIDC identity of `project`'s steps in `phase`, as the default branch's `policy` names it
        (else the server's defaults); None when plangate issues no tokens or the project has no identity."""
        oidc = self.settings.oidc
        if oidc is None:
            return None
        credentials = credentials_for(policy.projects, project.name, project.workspace, project.dir, oidc.defaults)
        if credentials is None:
            return None
        return Grant(
            keys=KeyRing(oidc.key_dir),
            issuer=oidc.issuer,
            credentials=credentials,
            phase=phase,
            repo=repo,
            repo_id=repo_id,
            project=project.name,
            workspace=project.workspace,
            sha=sha,
            root=token_root(self.settings),
            pr=pr,
            ref=ref,
            approvers=approvers,
            remember=self.tokens.remember,
        )

    def sandbox_for(self, phase: GrantPhase) -> Sandbox:
        """The sandbox showing the host paths granted to `phase` (core/sandbox_paths.py)."""
        return replace(self.sandbox, grants=self.settings.sandbox_paths.grants(phase))

    @property
    def run_store(self) -> RunStore:
        """Run pages' records (plumbing.run_store), sealed with this process's records key."""
        return RunStore(self.records)

    @property
    def checkouts(self) -> Path:
        return self.settings.workdir / "checkouts"

    @property
    def trees(self) -> Path:
        """Commits checked out once per host and shared read-only by sandboxed plans (adapters/trees.py)."""
        return self.settings.workdir / "trees"

    def record_sandbox(self) -> None:
        """Tell the status page how this worker runs terraform (an opt-out must be visible)."""
        name = f"{socket.gethostname()}:{os.getpid()}"
        self.redis.set(f"{SANDBOX_KEY_PREFIX}{name}", self.described(), ex=SANDBOX_RECORD_TTL)

    def described(self) -> str:
        """The sandbox and what each phase sees of the host, for the start-up line and the status page."""
        return describe(self.sandbox, self.settings.sandbox_paths)


def token_root(settings: Settings) -> Path:
    """Where every step's OIDC token directory is made: a grant showing it would show a PR's plan the
    token of an apply running beside it."""
    return settings.workdir / "oidc-tokens"


def check_secrets_hidden(settings: Settings, sandbox: Sandbox) -> None:
    """A secret file either phase's sandbox could read would hand it to terraform: refuse to start,
    naming the grant that shows it (else the secret's own setting: it lies in a system directory). With
    no sandbox every step reads the OIDC signing keys and any other step's token: a PR's plan would mint
    itself `phase:apply`, so plangate issues no token then and refuses to start."""
    if not sandbox.enabled:
        if settings.oidc is not None:
            raise SandboxError(
                "setting PLANGATE_SANDBOX: off shows every terraform step the OIDC signing keys "
                "(PLANGATE_OIDC_KEY_DIR) and every other step's token; run with the sandbox or without OIDC"
            )
        return
    tokens = (("PLANGATE_WORKDIR", token_root(settings)),) if settings.oidc is not None else ()
    for setting, path in (*settings.secret_files, *tokens):
        for phase in GRANT_PHASES:
            if not replace(sandbox, grants=settings.sandbox_paths.grants(phase)).visible(path):
                continue
            granted = settings.sandbox_paths.by_setting(phase)
            exposed_by = next((name for name, grants in granted if shown_by(path, [g.path for g in grants])), setting)
            raise SandboxError(
                f"setting {exposed_by}: {path} ({setting}) holds a secret and would be visible inside the "
                f"{phase} phase's sandbox; keep secrets outside /usr, /etc and the granted paths"
            )


def build(loaded: Settings) -> WorkerContext:
    """A context from settings: Redis, the token cache, sealed records and the probed sandbox."""
    conn = connect(loaded.redis_url)
    assert loaded.app_id is not None and loaded.private_key is not None
    tokens = TokenCache(
        conn,
        app_id=loaded.app_id,
        private_key=loaded.private_key,
        api_url=loaded.api_url,
        secrets=loaded.secrets,
        report=loaded.report,
        retry_seconds=loaded.github_retry_seconds,
    )
    sandbox = prepare(loaded.sandbox, loaded.sandbox_paths, loaded.workdir / "sandbox-probe")
    check_secrets_hidden(loaded, sandbox)
    cache_is_concurrent("tofu", {"PATH": os.environ.get("PATH") or os.defpath})  # asked before the forks
    if loaded.oidc is not None:
        KeyRing(loaded.oidc.key_dir).ensure(time.time())  # the first key, made once for every process
    return WorkerContext(
        settings=loaded,
        redis=conn,
        tokens=tokens,
        records=Records(conn, loaded.private_key),
        sandbox=sandbox,
        memory_cap=probe_memory_cap(loaded.tf_cgroup),
    )


@cache
def context() -> WorkerContext:
    """Built once per process (before RQ forks its work horses) from the environment."""
    return build(settings_module.load(need_app=True))
