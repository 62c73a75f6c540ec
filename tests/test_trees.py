"""workers.adapters.trees: one checkout of a commit per host, shared while in use, swept when idle."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from pathlib import Path

import pytest

import workers.adapters.trees as trees
from workers.adapters.checkout import CheckoutError, checkout, object_cache
from workers.adapters.trees import IDLE_AFTER, shared_tree, sweep

GIT = {"PATH": os.environ["PATH"], "HOME": "/nonexistent", "GIT_CONFIG_NOSYSTEM": "1"}
GIT |= {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e"}


@pytest.fixture
def origin(tmp_path: Path) -> tuple[str, str]:
    """A repository with one commit of two project directories: (file:// url, sha)."""
    work = tmp_path / "origin"
    for name in ("a", "b"):
        (work / name).mkdir(parents=True)
        (work / name / "main.tf").write_text(f"# {name}\n")
    for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "one"]):
        subprocess.run(["git", *args], cwd=work, env=GIT, check=True)
    sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=work, env=GIT, check=True, capture_output=True, text=True)
    return f"file://{work}", sha.stdout.strip()


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    real = checkout

    def counted(url: str, sha: str, dest: Path, token: str | None, **kw: object) -> None:
        calls.append(sha)
        real(url, sha, dest, token, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(trees, "checkout", counted)
    return calls


def test_a_commit_is_checked_out_once_and_reused(
    origin: tuple[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, sha = origin
    calls = _counting(monkeypatch)
    cache = object_cache(tmp_path / "objects", 1)
    with shared_tree(tmp_path / "trees", 1, sha, url, None, timeout=60, cache=cache) as first:
        assert (first / "a" / "main.tf").read_text() == "# a\n"
    with shared_tree(tmp_path / "trees", 1, sha, url, None, timeout=60, cache=cache) as again:
        assert again == first and (again / "b" / "main.tf").is_file()
    assert calls == [sha]


def test_jobs_at_once_wait_for_the_one_checkout(
    origin: tuple[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, sha = origin
    calls = _counting(monkeypatch)
    seen: list[bool] = []

    def job() -> None:
        cache = object_cache(tmp_path / "objects", 1)
        with shared_tree(tmp_path / "trees", 1, sha, url, None, timeout=60, cache=cache) as tree:
            seen.append((tree / "a" / "main.tf").is_file())

    threads = [threading.Thread(target=job) for _ in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == [True] * 5 and calls == [sha]


def test_a_failed_checkout_leaves_nothing_and_is_tried_again(origin: tuple[str, str], tmp_path: Path) -> None:
    url, sha = origin
    root, cache = tmp_path / "trees", object_cache(tmp_path / "objects", 1)
    with pytest.raises(CheckoutError), shared_tree(root, 1, sha, url + "-gone", None, timeout=60, cache=cache):
        pass
    assert sorted(p.name for p in (root / "1").iterdir()) == [f"{sha}.lock", f"{sha}.use"]
    with shared_tree(root, 1, sha, url, None, timeout=60, cache=cache) as tree:
        assert (tree / "a" / "main.tf").is_file()


def test_maintenance_removes_idle_trees_but_never_one_in_use(origin: tuple[str, str], tmp_path: Path) -> None:
    url, sha = origin
    root, cache = tmp_path / "trees", object_cache(tmp_path / "objects", 1)
    later = time.time() + IDLE_AFTER + 60
    with shared_tree(root, 1, sha, url, None, timeout=60, cache=cache) as tree:
        assert sweep(root, now=later) == 0 and tree.is_dir()  # a job still plans from it
    assert sweep(root, now=time.time()) == 0 and tree.is_dir()  # used a moment ago
    assert sweep(root, now=later) == 1 and not tree.exists()
    with shared_tree(root, 1, sha, url, None, timeout=60, cache=cache) as back:
        assert (back / "a" / "main.tf").is_file()  # checked out again when needed


def test_a_tree_in_use_is_entered_by_other_jobs_at_once(origin: tuple[str, str], tmp_path: Path) -> None:
    url, sha = origin
    root, cache = tmp_path / "trees", object_cache(tmp_path / "objects", 1)
    inside, done = threading.Event(), threading.Event()

    def long_plan() -> None:
        with shared_tree(root, 1, sha, url, None, timeout=60, cache=cache):
            inside.set()
            done.wait(30)

    first = threading.Thread(target=long_plan)
    first.start()
    try:
        assert inside.wait(30)
        with shared_tree(root, 1, sha, url, None, timeout=10, cache=cache) as tree:  # not after the first ends
            assert (tree / "b" / "main.tf").is_file()
    finally:
        done.set()
        first.join()
