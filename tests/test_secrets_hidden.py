"""`plangate worker` refuses to start when a phase's sandbox would show a secret: the OIDC token
directories too, where an apply's token lies while a PR's plan may run beside it."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.sandbox_paths import SandboxPaths, parse_grants
from plumbing.oidc_settings import OidcSettings
from plumbing.settings import Settings
from workers.adapters.terraform.sandbox import Sandbox, SandboxError
from workers.context import check_secrets_hidden, token_root


def _settings(workdir: Path, granted: str, *, oidc: bool) -> Settings:
    return Settings(
        app_id=1,
        private_key=None,
        webhook_secret=None,
        api_url="http://127.0.0.1:1",
        redis_url="redis://127.0.0.1:1",
        workdir=workdir,
        tf_env=(),
        tf_timeout=60.0,
        tf_memory_mb=512,
        mask_patterns=(),
        drift_schedule=None,
        sandbox_paths=SandboxPaths(plan=parse_grants(granted)),
        oidc=OidcSettings(workdir.parent / "oidc-keys", "https://plangate.example") if oidc else None,
    )


def test_a_grant_showing_the_token_directories_to_a_plan_stops_the_worker(sandbox: Sandbox, tmp_path: Path) -> None:
    workdir = tmp_path / "work"
    settings = _settings(workdir, str(workdir), oidc=True)
    with pytest.raises(SandboxError, match=r"PLANGATE_SANDBOX_PATHS_PLAN: .*oidc-tokens"):
        check_secrets_hidden(settings, sandbox)
    assert token_root(settings) == workdir / "oidc-tokens"


def test_the_same_grant_without_oidc_or_one_beside_the_tokens_is_fine(sandbox: Sandbox, tmp_path: Path) -> None:
    workdir = tmp_path / "work"
    check_secrets_hidden(_settings(workdir, str(workdir), oidc=False), sandbox)
    check_secrets_hidden(_settings(workdir, str(workdir / "shared"), oidc=True), sandbox)


def test_without_a_sandbox_a_worker_issuing_tokens_does_not_start(tmp_path: Path) -> None:
    """Every step could read the signing keys and mint itself `phase:apply`: no token is worth that."""
    workdir = tmp_path / "work"
    with pytest.raises(SandboxError, match=r"PLANGATE_SANDBOX: off .*\(PLANGATE_OIDC_KEY_DIR\)"):
        check_secrets_hidden(_settings(workdir, "", oidc=True), Sandbox("off"))
    check_secrets_hidden(_settings(workdir, "", oidc=False), Sandbox("off"))
