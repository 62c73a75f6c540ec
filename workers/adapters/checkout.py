"""Fetch exactly one commit of a repository into a fresh directory, with the token never at rest.

The installation token travels as an `Authorization: Basic` header scoped to the clone URL's origin,
handed to the one `git fetch` through GIT_CONFIG_COUNT/KEY/VALUE environment variables: not in argv
(visible to `ps`), not in .git/config, and scrubbed from any git output before it reaches an exception.
Git runs with an empty HOME, no system or global config and no prompts.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import hashlib
import logging
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO
from urllib.parse import urlsplit

from workers.adapters.terraform.runner import RunResult, run

log = logging.getLogger("plangate.checkout")
_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
# A fetch into a cache runs git's automatic maintenance (`git maintenance run --auto`, a process of
# its own, on a PR's path) at most this often; it consolidates the packs fetches leave.
MAINTENANCE_EVERY = 3600.0
# Every fetch keeps its pack (`index-pack`) instead of writing each object as a file of its own
# (`unpack-objects`, git's way for fewer than 100): one file written per fetch, not one per object.
KEEP_PACKS = {"fetch.unpackLimit": "1"}
NO_MAINTENANCE = {"maintenance.auto": "false", "gc.auto": "0"}  # gc.auto: for gits before 2.29
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


class CheckoutError(RuntimeError):
    """The commit could not be fetched or checked out; the message never holds the token."""


def _auth_header(token: str) -> str:
    basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    return f"Authorization: Basic {basic}"


def scrub(text: str, token: str | None) -> str:
    if not token:
        return text
    for secret in (_auth_header(token), _auth_header(token).split()[-1], token):
        text = text.replace(secret, "***")
    return text


def _origin(url: str) -> str:
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}/"


def _git_env(home: Path, config: dict[str, str]) -> dict[str, str]:
    env = {
        "PATH": os.environ.get("PATH") or os.defpath,
        "HOME": str(home),
        "LANG": "C",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
    }
    return _with_config(env, {"protocol.ext.allow": "never", **KEEP_PACKS, **config})


def _with_config(env: dict[str, str], settings: dict[str, str]) -> dict[str, str]:
    """`env` with git `settings` added through GIT_CONFIG_COUNT/KEY/VALUE, after any it holds."""
    count = int(env.get("GIT_CONFIG_COUNT", "0"))
    added = dict(env, GIT_CONFIG_COUNT=str(count + len(settings)))
    for i, (key, value) in enumerate(settings.items(), start=count):
        added[f"GIT_CONFIG_KEY_{i}"] = key
        added[f"GIT_CONFIG_VALUE_{i}"] = value
    return added


def _git(args: list[str], *, cwd: Path, env: dict[str, str], deadline: float, token: str | None) -> RunResult:
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise CheckoutError(f"git {args[0]} not started: checkout timed out")
    result = run(["git", *args], cwd=cwd, env=env, timeout=remaining, memory_limit_bytes=None, grace=2.0)
    if not result.ok:
        why = "timed out" if result.timed_out else f"failed (exit {result.returncode})"
        detail = scrub(result.stderr.decode("utf-8", "replace").strip()[-2000:], token)
        raise CheckoutError(f"git {args[0]} {why}: {detail}")
    return result


def checkout(
    clone_url: str, sha: str, dest: Path, token: str | None, *, timeout: float, cache: Path | None = None
) -> None:
    """Check out `sha` (full hex) of `clone_url` into `dest` (absent or empty), HEAD detached at it.

    With `cache` (the repository's object cache on this host, `object_cache`), the commit is fetched
    into the cache unless it is there already, and `dest` borrows its objects (git alternates): the
    PR's dispatch, its project plans and the apply after the merge fetch each commit once per host.
    A cache that fails is bypassed: the commit is fetched straight into `dest`."""
    if not _SHA.fullmatch(sha):
        raise CheckoutError(f"not a full commit SHA: {sha!r}")
    dest.mkdir(parents=True, exist_ok=True)
    if any(dest.iterdir()):
        raise CheckoutError(f"checkout destination is not empty: {dest}")
    deadline = time.monotonic() + timeout
    with tempfile.TemporaryDirectory(prefix="plangate-git-home-") as home:
        plain = _git_env(Path(home), {})
        auth = _git_env(Path(home), {f"http.{_origin(clone_url)}.extraHeader": _auth_header(token)}) if token else plain
        init = ["init", "--quiet", "--template=", "."]
        borrowed: Path | None = None  # the object cache dest borrows from, once it holds the commit
        with ThreadPoolExecutor(max_workers=1) as pool:  # the new repository is made while the cache fetches
            made = pool.submit(_git, init, cwd=dest, env=plain, deadline=deadline, token=token)
            if cache is not None:
                try:
                    _cached(cache, clone_url, sha, plain, auth, deadline, token)
                    borrowed = cache
                except (CheckoutError, OSError) as exc:
                    log.warning("object cache %s bypassed: %s", cache, exc)
            made.result()
        if borrowed is not None:
            (dest / ".git" / "objects" / "info").mkdir(parents=True, exist_ok=True)
            (dest / ".git" / "objects" / "info" / "alternates").write_text(f"{borrowed / 'objects'}\n")
        else:
            fetch = ["fetch", "--quiet", "--depth", "1", "--no-tags", "--", clone_url, sha]
            _git(fetch, cwd=dest, env=auth, deadline=deadline, token=token)
        co = ["-c", "advice.detachedHead=false", "checkout", "--quiet", "--detach", "--force", sha]
        _git(co, cwd=dest, env=plain, deadline=deadline, token=token)
    got = (dest / ".git" / "HEAD").read_text().strip()  # detached: the SHA itself (no git process)
    if got != sha:
        raise CheckoutError(f"checked out {got}, expected {sha}")


def object_cache(root: Path, repo_id: int) -> Path:
    """The object cache of a repository under `root` (never inside a checkout the sandbox sees)."""
    return root / f"{int(repo_id)}.git"


def _cached(
    cache: Path,
    clone_url: str,
    sha: str,
    plain: dict[str, str],
    auth: dict[str, str],
    deadline: float,
    token: str | None,
) -> None:
    """Make sure the cache holds the commit `sha`: one fetcher per repository at a time on this host."""
    cache.parent.mkdir(parents=True, exist_ok=True)
    with _locked(cache.with_suffix(".lock"), deadline):
        if not (cache / "objects").is_dir():
            _git(
                ["init", "--quiet", "--bare", "--template=", str(cache)],
                cwd=cache.parent,
                env=plain,
                deadline=deadline,
                token=token,
            )
        fetched = _fetched_marker(cache, sha)
        if fetched.exists() and _has_commit(cache, sha, plain, deadline):
            return
        maintained = cache / "plangate-maintained"
        due = not maintained.exists() or time.time() - maintained.stat().st_mtime > MAINTENANCE_EVERY
        fetch = ["fetch", "--quiet", "--depth", "1", "--no-tags", "--", clone_url, sha]
        _git(fetch, cwd=cache, env=auth if due else _with_config(auth, NO_MAINTENANCE), deadline=deadline, token=token)
        fetched.parent.mkdir(exist_ok=True)
        fetched.touch()
        if due:
            maintained.touch()


def _fetched_marker(cache: Path, sha: str) -> Path:
    """Written once the cache fetched `sha`: a commit never fetched here (a PR's new head, the
    usual case) goes straight to the fetch, without a git process to ask whether the cache has it."""
    return cache / "plangate-fetched" / sha


def _has_commit(cache: Path, sha: str, env: dict[str, str], deadline: float) -> bool:
    remaining = deadline - time.monotonic()
    probe = run(
        ["git", "cat-file", "-e", f"{sha}^{{commit}}"],
        cwd=cache,
        env=env,
        timeout=max(remaining, 0.1),
        memory_limit_bytes=None,
    )
    return probe.ok


@contextlib.contextmanager
def _locked(path: Path, deadline: float) -> Iterator[None]:
    """An exclusive flock on `path`, waited for until `deadline` (a fetch holding it is bounded too)."""
    with path.open("a") as handle:
        wait_flock(handle, fcntl.LOCK_EX, deadline)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def wait_flock(handle: IO[str], kind: int, deadline: float) -> None:
    """Take the flock `kind` on `handle`, waiting until `deadline`; CheckoutError past it."""
    while True:
        try:
            fcntl.flock(handle, kind | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise CheckoutError(f"{Path(handle.name).name} stayed locked: checkout timed out") from None
            time.sleep(0.05)


def is_sha(text: str) -> bool:
    return _SHA.fullmatch(text) is not None


def remote_head(clone_url: str, branch: str, token: str | None, *, timeout: float) -> str:
    """The SHA `branch` points at on the remote (`git ls-remote`), authenticated like a fetch."""
    deadline = time.monotonic() + timeout
    with tempfile.TemporaryDirectory(prefix="plangate-git-home-") as home:
        header = {f"http.{_origin(clone_url)}.extraHeader": _auth_header(token)} if token else {}
        env = _git_env(Path(home), header)
        ref = f"refs/heads/{branch}"
        out = _git(["ls-remote", "--", clone_url, ref], cwd=Path(home), env=env, deadline=deadline, token=token)
    for line in out.stdout.decode().splitlines():
        sha, _, name = line.partition("\t")
        if name == ref and _SHA.fullmatch(sha):
            return sha
    raise CheckoutError(f"branch {branch!r} not found on the remote")


def _safe(part: str) -> str:
    """A path component for any string: readable, and distinct for distinct inputs."""
    digest = hashlib.sha256(part.encode()).hexdigest()[:8]
    return f"{_SAFE.sub('_', part).strip('._')[:60]}-{digest}"


def workdir_for(root: Path, repo_id: int, pr_or_ref: str, sha: str, project: str) -> Path:
    """The one directory for (repo, PR or ref, SHA, project) under `root`."""
    if not _SHA.fullmatch(sha):
        raise ValueError(f"not a full commit SHA: {sha!r}")
    return root / str(int(repo_id)) / _safe(pr_or_ref) / sha / _safe(project)


def remove_tree(path: Path) -> None:
    """Remove `path` and all in it, what the owner itself may not list included: a project sandbox's
    control directory (mode 0311) left by a worker killed while it ran."""

    def opened_up(_func: object, name: str, exc: object) -> None:
        if os.path.isdir(name) and not os.path.islink(name):
            with contextlib.suppress(OSError):
                os.chmod(name, 0o700)
                shutil.rmtree(name, ignore_errors=True)

    shutil.rmtree(path, onerror=opened_up)


@contextlib.contextmanager
def job_workdir(root: Path, repo_id: int, pr_or_ref: str, sha: str, project: str) -> Iterator[Path]:
    """A fresh private directory inside `workdir_for(...)`, removed (with empty parents) afterwards.

    Fresh per use, so a retried job never shares files with one still running for the same key.
    """
    base = workdir_for(root, repo_id, pr_or_ref, sha, project)
    base.mkdir(parents=True, exist_ok=True)
    path = Path(tempfile.mkdtemp(prefix="run-", dir=base))
    try:
        yield path
    finally:
        remove_tree(path)
        parent = base
        while parent != root and parent.is_relative_to(root):
            try:
                parent.rmdir()
            except OSError:
                break
            parent = parent.parent
