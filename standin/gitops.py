"""Real git on bare repositories: commits, diffs and merges with plumbing, no working tree."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


@dataclass(frozen=True)
class Identity:
    """A commit's author or committer as git records it. GitHub links it to a user by the email alone, so an
    identity with an email no user owns (`Identity("ghost", "nobody@example.com")`) is nobody on GitHub."""

    name: str
    email: str


# The committer of GitHub's own commits (merges made on the site): GitHub maps it to `web-flow`.
GITHUB = Identity("GitHub", "noreply@github.com")

_IDENTITY = {
    "GIT_AUTHOR_NAME": "standin",
    "GIT_AUTHOR_EMAIL": "standin@users.noreply.github.com",
    "GIT_COMMITTER_NAME": GITHUB.name,
    "GIT_COMMITTER_EMAIL": GITHUB.email,
}


class GitError(RuntimeError):
    pass


@dataclass(frozen=True)
class Symlink:
    """A symlink in a commit (mode 120000) pointing at `target`."""

    target: str


@dataclass(frozen=True)
class Executable:
    """An executable file in a commit (mode 100755)."""

    text: str


FileContent = str | Symlink | Executable | None  # None deletes the path


def _entry(content: str | Symlink | Executable) -> tuple[str, bytes]:
    if isinstance(content, Symlink):
        return "120000", content.target.encode()
    if isinstance(content, Executable):
        return "100755", content.text.encode()
    return "100644", content.encode()


def git(repo: Path, *args: str, input: bytes | None = None, env: dict[str, str] | None = None) -> str:
    full_env = {**os.environ, **_IDENTITY, "GIT_CONFIG_NOSYSTEM": "1", **(env or {})}
    proc = subprocess.run(
        ["git", "--git-dir", str(repo), *args], input=input, capture_output=True, env=full_env, check=False
    )
    if proc.returncode != 0:
        raise GitError(f"git {args[0]} failed: {proc.stderr.decode(errors='replace').strip()}")
    return proc.stdout.decode()


def init_bare(path: Path, default_branch: str) -> None:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "--bare", "-q", "-b", default_branch, str(path)], check=True, capture_output=True)
    # GitHub lets a client fetch any single commit by SHA; so must we.
    git(path, "config", "uploadpack.allowReachableSHA1InWant", "true")
    git(path, "config", "uploadpack.allowAnySHA1InWant", "true")
    git(path, "config", "http.receivepack", "false")


def rev(repo: Path, ref: str) -> str | None:
    if (str(repo), ref) in _COMMITS:
        return ref
    try:
        sha = git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").strip() or None
    except GitError:
        return None
    if sha == ref:
        _COMMITS.add((str(repo), sha))
    return sha


# Commits already looked up by their SHA: the stand-in never removes one, so the next status or check
# run on that commit is validated without a git process, as quickly as GitHub answers it.
_COMMITS: set[tuple[str, str]] = set()


def commit_files(
    repo: Path,
    parent: str | None,
    files: Mapping[str, FileContent],
    message: str,
    author: Identity,
    committer: Identity | None = None,
) -> str:
    """A new commit on top of `parent` with `files` written (None deletes); returns its SHA.
    The committer is the author unless given, as when someone commits on their own machine."""
    committer = committer or author
    with tempfile.TemporaryDirectory() as tmp:
        env = {
            "GIT_INDEX_FILE": str(Path(tmp) / "index"),
            "GIT_AUTHOR_NAME": author.name,
            "GIT_AUTHOR_EMAIL": author.email,
            "GIT_COMMITTER_NAME": committer.name,
            "GIT_COMMITTER_EMAIL": committer.email,
        }
        git(repo, "read-tree", parent or EMPTY_TREE, env=env)
        lines = []
        for path, content in files.items():
            if content is None:  # mode 0 removes the entry
                lines.append(f"0 {'0' * 40}\t{path}\n")
                continue
            mode, data = _entry(content)
            blob = git(repo, "hash-object", "-w", "--stdin", input=data, env=env).strip()
            lines.append(f"{mode} {blob}\t{path}\n")
        git(repo, "update-index", "--index-info", input="".join(lines).encode(), env=env)
        tree = git(repo, "write-tree", env=env).strip()
        parents = ["-p", parent] if parent else []
        return git(repo, "commit-tree", tree, *parents, "-m", message, env=env).strip()


def update_ref(repo: Path, ref: str, sha: str) -> None:
    git(repo, "update-ref", ref, sha)


@dataclass(frozen=True)
class CommitInfo:
    """One commit as `git log` tells it: what GitHub's commit objects are made of."""

    sha: str
    tree: str
    parents: tuple[str, ...]
    author: Identity
    authored: dt.datetime
    committer: Identity
    committed: dt.datetime
    message: str


_LOG_FORMAT = "%H%x1f%T%x1f%P%x1f%an%x1f%ae%x1f%aI%x1f%cn%x1f%ce%x1f%cI%x1f%B"


def log(repo: Path, base: str, head: str) -> list[CommitInfo]:
    """The commits reachable from `head` but not from `base` (every one for no `base`), oldest first
    (a PR's commits)."""
    out = git(repo, "log", "-z", "--reverse", f"--format={_LOG_FORMAT}", f"{base}..{head}" if base else head)
    commits = []
    for record in filter(None, out.split("\0")):
        sha, tree, parents, an, ae, ad, cn, ce, cd, message = record.split("\x1f", 9)
        when = dt.datetime.fromisoformat
        author, committer = Identity(an, ae), Identity(cn, ce)
        commits.append(
            CommitInfo(sha, tree, tuple(parents.split()), author, when(ad), committer, when(cd), message.rstrip("\n"))
        )
    return commits


def count(repo: Path, base: str, head: str) -> int:
    """How many commits `log` would list, without reading them."""
    return int(git(repo, "rev-list", "--count", f"{base}..{head}").strip())


def merge_tree(repo: Path, base: str, head: str) -> str:
    """The tree of merging head into base; GitError on conflict."""
    return git(repo, "merge-tree", "--write-tree", base, head).splitlines()[0].strip()


def commit_tree(repo: Path, tree: str, parents: list[str], message: str) -> str:
    args = [a for p in parents for a in ("-p", p)]
    return git(repo, "commit-tree", tree, *args, "-m", message).strip()


def is_ancestor(repo: Path, ancestor: str, descendant: str) -> bool:
    try:
        git(repo, "merge-base", "--is-ancestor", ancestor, descendant)
        return True
    except GitError:
        return False


@dataclass(frozen=True)
class FileChange:
    filename: str
    status: str  # added | removed | modified | renamed
    additions: int
    deletions: int
    previous_filename: str | None = None
    sha: str | None = None


_STATUS = {"A": "added", "D": "removed", "M": "modified", "R": "renamed", "T": "changed", "C": "copied"}


def _blobs(repo: Path, commit: str) -> dict[str, str]:
    """path → blob SHA of every file of `commit`, from one `git ls-tree` (one process, not one per file)."""
    found: dict[str, str] = {}
    for entry in git(repo, "ls-tree", "-r", "-z", "--full-tree", commit).split("\0"):
        meta, tab, path = entry.partition("\t")
        if tab:
            found[path] = meta.split()[2]
    return found


def diff_files(repo: Path, base: str, head: str, three_dot: bool = True) -> list[FileChange]:
    """Files changed from base to head (from their merge base when three_dot), as GitHub lists them."""
    spec = f"{base}...{head}" if three_dot else f"{base}..{head}"
    numstat: dict[str, tuple[int, int]] = {}
    parts = git(repo, "diff", "-M", "--numstat", "-z", spec).split("\0")
    i = 0
    while i < len(parts) - 1:
        added, deleted, path = parts[i].split("\t", 2)
        if path == "":  # rename: old and new names follow
            path = parts[i + 2]
            i += 3
        else:
            i += 1
        numstat[path] = (int(added) if added != "-" else 0, int(deleted) if deleted != "-" else 0)
    changes: list[FileChange] = []
    fields = git(repo, "diff", "-M", "--name-status", "-z", spec).split("\0")
    blobs = _blobs(repo, head)
    i = 0
    while i < len(fields) - 1:
        code = fields[i][0]
        if code in "RC":
            old, new = fields[i + 1], fields[i + 2]
            i += 3
        else:
            old, new = None, fields[i + 1]
            i += 2
        adds, dels = numstat.get(new, (0, 0))
        blob = None if code == "D" else blobs.get(new)
        changes.append(FileChange(new, _STATUS.get(code, "modified"), adds, dels, old, blob))
    return changes
