"""A token per terraform step: plangate mints a short-lived OIDC token for the step's project and phase,
writes it (and what the cloud SDKs read beside it) into a directory of its own that only this step's
sandbox is shown, read-only, and removes it when the step ends. Another job's sandbox never sees it; a
token outlives its step by at most its lifetime (core.oidc.lifetime: the step's timeout, at most 1 h)."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from core import oidc
from core.config_credentials import Credentials
from core.oidc_env import identity
from plumbing.oidc_keys import KeyRing, sign


class OidcError(RuntimeError):
    """No key to sign with: PLANGATE_OIDC_KEY_DIR holds none (the worker makes one at start-up)."""


@dataclass(frozen=True)
class Grant:
    """What one project's steps of one phase are: the claims their tokens carry and where they are written."""

    keys: KeyRing
    issuer: str
    credentials: Credentials
    phase: str  # core.oidc.PHASES
    repo: str
    repo_id: int
    project: str
    workspace: str
    sha: str
    root: Path  # where each step's token directory is made: never shown to a sandbox
    pr: int | None = None
    ref: str | None = None
    approvers: tuple[str, ...] = ()
    remember: Callable[[str], None] | None = None  # the backstop learns each token: never in a comment

    @contextlib.contextmanager
    def step(self, timeout: float) -> Iterator[tuple[dict[str, str], Path | None]]:
        """(environment to add, directory to show read-only) for one step; nothing when the phase has no
        identity for any cloud."""
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        directory = Path(tempfile.mkdtemp(prefix="step-", dir=self.root))
        try:
            found = identity(self.credentials, self.phase, str(directory), self.project)
            if found.empty:
                yield {}, None
                return
            now = int(time.time())
            key = self.keys.signing(now)
            if key is None:
                raise OidcError(f"setting PLANGATE_OIDC_KEY_DIR: no signing key in {self.keys.directory}")
            for token_file in found.tokens:
                token = sign(key, self._claims(token_file.audience, now, timeout))
                if self.remember is not None:
                    self.remember(token)
                _write(directory / token_file.name, token)
            for name, text in found.files.items():
                _write(directory / name, text)
            yield found.env, directory
        finally:
            shutil.rmtree(directory, ignore_errors=True)

    def _claims(self, audience: str, now: int, timeout: float) -> dict[str, object]:
        return oidc.claims(
            issuer=self.issuer,
            audience=audience,
            repo=self.repo,
            repo_id=self.repo_id,
            project=self.project,
            workspace=self.workspace,
            phase=self.phase,
            sha=self.sha,
            now=now,
            lifetime_seconds=oidc.lifetime(timeout),
            token_id=secrets.token_urlsafe(16),
            pr=self.pr,
            ref=self.ref,
            approvers=self.approvers,
        )


def _write(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(text)
