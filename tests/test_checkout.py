"""workers.adapters.checkout: exact-SHA checkout, header auth against a real smart-HTTP server, no token at rest."""

from __future__ import annotations

import base64
import os
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from workers.adapters import checkout as checkout_module
from workers.adapters.checkout import CheckoutError, checkout, job_workdir, object_cache, scrub, workdir_for

TOKEN = "ghs_" + "A1b2C3d4E5" * 8  # installation tokens are long; never assume 40 characters
BASIC = base64.b64encode(f"x-access-token:{TOKEN}".encode()).decode()
GIT_ENV = {
    "PATH": os.environ["PATH"],
    "HOME": "/nonexistent",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
}


def _git(*args: str, cwd: Path) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, env=GIT_ENV, check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.fixture(scope="module")
def origin(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """A bare repo `repos/infra.git` with three commits on main; returns (repos root, [sha1, sha2, sha3])."""
    root = tmp_path_factory.mktemp("origin")
    work = root / "work"
    work.mkdir()
    _git("init", "-q", "-b", "main", cwd=work)
    shas = []
    for n in (1, 2, 3):
        (work / "main.tf").write_text(f"# version {n}\n")
        _git("add", "main.tf", cwd=work)
        _git("commit", "-q", "-m", f"v{n}", cwd=work)
        shas.append(_git("rev-parse", "HEAD", cwd=work))
    repos = root / "repos"
    repos.mkdir()
    _git("clone", "-q", "--bare", str(work), str(repos / "infra.git"), cwd=root)
    _git("config", "http.receivepack", "false", cwd=repos / "infra.git")
    return repos, shas


def _all_bytes_under(path: Path) -> Iterator[bytes]:
    for file in path.rglob("*"):
        if file.is_file():
            yield file.read_bytes()


def _assert_no_token_at_rest(dest: Path) -> None:
    for data in _all_bytes_under(dest / ".git"):
        assert TOKEN.encode() not in data and BASIC.encode() not in data
    config = (dest / ".git" / "config").read_text()
    assert "extraheader" not in config.lower() and "authorization" not in config.lower()


def test_checks_out_an_exact_sha_that_is_not_the_tip(origin: tuple[Path, list[str]], tmp_path: Path) -> None:
    repos, shas = origin
    dest = tmp_path / "src"
    checkout(f"file://{repos / 'infra.git'}", shas[1], dest, TOKEN, timeout=60)
    assert _git("rev-parse", "HEAD", cwd=dest) == shas[1]
    assert (dest / "main.tf").read_text() == "# version 2\n"
    assert _git("status", "--porcelain", cwd=dest) == ""
    _assert_no_token_at_rest(dest)


def test_refuses_bad_sha_and_non_empty_destination(origin: tuple[Path, list[str]], tmp_path: Path) -> None:
    repos, shas = origin
    url = f"file://{repos / 'infra.git'}"
    with pytest.raises(CheckoutError, match="not a full commit SHA"):
        checkout(url, "--upload-pack=touch /tmp/x", tmp_path / "a", None, timeout=60)
    with pytest.raises(CheckoutError, match="not a full commit SHA"):
        checkout(url, shas[0][:12], tmp_path / "a", None, timeout=60)
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "leftover").write_text("x")
    with pytest.raises(CheckoutError, match="not empty"):
        checkout(url, shas[0], tmp_path / "b", None, timeout=60)


def test_unknown_sha_fails_without_the_token(origin: tuple[Path, list[str]], tmp_path: Path) -> None:
    repos, _ = origin
    with pytest.raises(CheckoutError, match="git fetch failed") as err:
        checkout(f"file://{repos / 'infra.git'}", "1" * 40, tmp_path / "src", TOKEN, timeout=60)
    assert TOKEN not in str(err.value) and BASIC not in str(err.value)


def test_bogus_url_fails_without_the_token(tmp_path: Path) -> None:
    with pytest.raises(CheckoutError, match="git fetch failed") as err:
        checkout("http://127.0.0.1:1/o/r.git", "2" * 40, tmp_path / "src", TOKEN, timeout=60)
    assert TOKEN not in str(err.value) and BASIC not in str(err.value)


def test_scrub_removes_token_header_and_its_base64() -> None:
    text = f"x {TOKEN} y Authorization: Basic {BASIC} z {BASIC}"
    scrubbed = scrub(text, TOKEN)
    assert TOKEN not in scrubbed and BASIC not in scrubbed
    assert scrubbed.startswith("x *** y")


class _GitHTTP(BaseHTTPRequestHandler):
    """git http-backend behind a Basic-auth check, as a CGI."""

    repos: Path
    seen_auth: list[str | None]

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def _serve(self) -> None:
        auth = self.headers.get("Authorization")
        self.seen_auth.append(auth)
        if auth != f"Basic {BASIC}":
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="git"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        path, _, query = self.path.partition("?")
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        env = {
            "PATH": os.environ["PATH"],
            "GIT_PROJECT_ROOT": str(self.repos),
            "GIT_HTTP_EXPORT_ALL": "1",
            "GIT_CONFIG_NOSYSTEM": "1",
            "PATH_INFO": path,
            "QUERY_STRING": query,
            "REQUEST_METHOD": self.command,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "REMOTE_ADDR": "127.0.0.1",
            "GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
        }
        out = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True, check=True)
        head, _, payload = out.stdout.partition(b"\r\n\r\n")
        headers = [line.split(": ", 1) for line in head.decode().split("\r\n") if line]
        status = next((int(v.split()[0]) for k, v in headers if k.lower() == "status"), 200)
        self.send_response(status)
        for key, value in headers:
            if key.lower() != "status":
                self.send_header(key, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


@pytest.fixture
def http_origin(origin: tuple[Path, list[str]]) -> Iterator[tuple[str, list[str], list[str | None]]]:
    """A smart-HTTP server on loopback that requires the token; yields (clone url, shas, auth headers seen)."""
    repos, shas = origin
    seen: list[str | None] = []
    handler = type("Handler", (_GitHTTP,), {"repos": repos, "seen_auth": seen})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/infra.git", shas, seen
    server.shutdown()
    server.server_close()


def test_http_fetch_authenticates_with_the_header(
    http_origin: tuple[str, list[str], list[str | None]], tmp_path: Path
) -> None:
    url, shas, seen = http_origin
    dest = tmp_path / "src"
    checkout(url, shas[0], dest, TOKEN, timeout=60)
    assert _git("rev-parse", "HEAD", cwd=dest) == shas[0]
    assert (dest / "main.tf").read_text() == "# version 1\n"
    assert seen and all(auth == f"Basic {BASIC}" for auth in seen)
    _assert_no_token_at_rest(dest)


@pytest.mark.parametrize("token", [None, "ghs_" + "Z" * 80])
def test_http_fetch_without_the_right_token_is_refused(
    http_origin: tuple[str, list[str], list[str | None]], tmp_path: Path, token: str | None
) -> None:
    url, shas, seen = http_origin
    with pytest.raises(CheckoutError, match="git fetch failed") as err:
        checkout(url, shas[0], tmp_path / "src", token, timeout=60)
    assert seen and "terminal prompts disabled" in str(err.value)  # refused, and git never prompted
    if token is not None:
        wrong = base64.b64encode(f"x-access-token:{token}".encode()).decode()
        assert token not in str(err.value) and wrong not in str(err.value)


def test_the_object_cache_fetches_each_commit_once(
    http_origin: tuple[str, list[str], list[str | None]], tmp_path: Path
) -> None:
    url, shas, seen = http_origin
    cache = object_cache(tmp_path / "checkouts", 42)
    checkout(url, shas[0], tmp_path / "dispatch", TOKEN, timeout=60, cache=cache)
    fetched = len(seen)
    checkout(url, shas[0], tmp_path / "plan", TOKEN, timeout=60, cache=cache)
    assert len(seen) == fetched > 0  # the project's plan borrowed what the dispatch fetched
    for dest, version in ((tmp_path / "dispatch", 1), (tmp_path / "plan", 1)):
        assert (dest / "main.tf").read_text() == f"# version {version}\n"
        assert _git("status", "--porcelain", cwd=dest) == ""
        _assert_no_token_at_rest(dest)
    for data in _all_bytes_under(cache):
        assert TOKEN.encode() not in data and BASIC.encode() not in data
    checkout(url, shas[2], tmp_path / "next", TOKEN, timeout=60, cache=cache)
    assert len(seen) > fetched and (tmp_path / "next" / "main.tf").read_text() == "# version 3\n"


def test_a_fetch_keeps_its_pack_instead_of_a_file_per_object(origin: tuple[Path, list[str]], tmp_path: Path) -> None:
    repos, shas = origin
    cache = object_cache(tmp_path / "checkouts", 42)
    checkout(f"file://{repos / 'infra.git'}", shas[1], tmp_path / "dest", None, timeout=60, cache=cache)
    objects = cache / "objects"
    assert list((objects / "pack").glob("*.pack")), "the fetched objects are one pack"
    assert not [d for d in objects.iterdir() if re.fullmatch(r"[0-9a-f]{2}", d.name)], "no loose objects"
    assert (tmp_path / "dest" / "main.tf").read_text() == "# version 2\n"


def test_a_commit_never_fetched_here_is_fetched_without_asking_the_cache_first(
    origin: tuple[Path, list[str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repos, shas = origin
    url = f"file://{repos / 'infra.git'}"
    asked: list[str] = []
    real_has = checkout_module._has_commit

    def has_commit(cache: Path, sha: str, *args: Any) -> bool:
        asked.append(sha)
        return real_has(cache, sha, *args)

    monkeypatch.setattr(checkout_module, "_has_commit", has_commit)
    cache = object_cache(tmp_path / "checkouts", 42)
    checkout(url, shas[0], tmp_path / "first", TOKEN, timeout=60, cache=cache)
    assert asked == []  # new here: no git process spent asking
    checkout(url, shas[0], tmp_path / "again", TOKEN, timeout=60, cache=cache)
    assert asked == [shas[0]]  # fetched before: the cache is asked, and answers
    shutil.rmtree(cache / "objects")  # the marker outlived the objects (a cache wiped by hand)
    _git("init", "--quiet", "--bare", str(cache), cwd=tmp_path)
    checkout(url, shas[0], tmp_path / "wiped", TOKEN, timeout=60, cache=cache)
    assert (tmp_path / "wiped" / "main.tf").read_text() == "# version 1\n"  # fetched again


def test_the_cache_runs_gits_maintenance_on_one_fetch_an_hour(
    origin: tuple[Path, list[str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repos, shas = origin
    url = f"file://{repos / 'infra.git'}"
    maintenance: list[bool] = []
    real_git = checkout_module._git

    def git(args: list[str], **kwargs: Any) -> Any:
        if args[0] == "fetch":
            env = kwargs["env"]
            settings = {
                env[f"GIT_CONFIG_KEY_{i}"]: env[f"GIT_CONFIG_VALUE_{i}"] for i in range(int(env["GIT_CONFIG_COUNT"]))
            }
            maintenance.append(settings.get("maintenance.auto") != "false")
        return real_git(args, **kwargs)

    monkeypatch.setattr(checkout_module, "_git", git)
    cache = object_cache(tmp_path / "checkouts", 42)
    for i, sha in enumerate(shas[:2]):
        checkout(url, sha, tmp_path / f"co-{i}", TOKEN, timeout=60, cache=cache)
    assert maintenance == [True, False]  # the first fetch maintains; the next, within the hour, does not
    hour_ago = time.time() - checkout_module.MAINTENANCE_EVERY - 1
    os.utime(cache / "plangate-maintained", (hour_ago, hour_ago))
    checkout(url, shas[2], tmp_path / "co-2", TOKEN, timeout=60, cache=cache)
    assert maintenance == [True, False, True]
    assert (tmp_path / "co-2" / "main.tf").read_text() == "# version 3\n"


def test_checkouts_at_once_share_the_cache(
    http_origin: tuple[str, list[str], list[str | None]], tmp_path: Path
) -> None:
    url, shas, _ = http_origin
    cache = object_cache(tmp_path / "checkouts", 42)
    jobs = [(shas[i % 3], tmp_path / f"job-{i}") for i in range(6)]
    with ThreadPoolExecutor(6) as pool:
        list(pool.map(lambda job: checkout(url, job[0], job[1], TOKEN, timeout=60, cache=cache), jobs))
    for sha, dest in jobs:
        assert _git("rev-parse", "HEAD", cwd=dest) == sha
        assert (dest / "main.tf").read_text() == f"# version {shas.index(sha) + 1}\n"


def test_the_new_repository_is_made_while_the_cache_fetches(
    origin: tuple[Path, list[str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repos, shas = origin
    fetching = threading.Event()
    made_meanwhile: list[bool] = []
    real_git, real_cached = checkout_module._git, checkout_module._cached

    def git(args: list[str], **kwargs: Any) -> Any:
        if args[0] == "init" and "--bare" not in args:
            made_meanwhile.append(fetching.wait(5))  # a repository made before the fetch began waits in vain
        return real_git(args, **kwargs)

    def cached(*args: Any) -> None:
        fetching.set()
        real_cached(*args)

    monkeypatch.setattr(checkout_module, "_git", git)
    monkeypatch.setattr(checkout_module, "_cached", cached)
    cache = object_cache(tmp_path / "checkouts", 42)
    checkout(f"file://{repos / 'infra.git'}", shas[1], tmp_path / "src", TOKEN, timeout=60, cache=cache)
    assert made_meanwhile == [True]
    assert (tmp_path / "src" / "main.tf").read_text() == "# version 2\n"


def test_a_cache_that_fails_is_bypassed(origin: tuple[Path, list[str]], tmp_path: Path) -> None:
    repos, shas = origin
    cache = object_cache(tmp_path / "checkouts", 42)
    cache.parent.mkdir()
    cache.write_text("not a repository")
    checkout(f"file://{repos / 'infra.git'}", shas[1], tmp_path / "src", TOKEN, timeout=60, cache=cache)
    assert (tmp_path / "src" / "main.tf").read_text() == "# version 2\n"
    assert not (tmp_path / "src" / ".git" / "objects" / "info" / "alternates").exists()


def test_workdir_is_one_directory_per_key(tmp_path: Path) -> None:
    sha = "a" * 40
    first = workdir_for(tmp_path, 42, "pr-7", sha, "infra/dns")
    assert first == workdir_for(tmp_path, 42, "pr-7", sha, "infra/dns")
    assert first != workdir_for(tmp_path, 42, "pr-7", sha, "infra_dns")
    assert first != workdir_for(tmp_path, 42, "pr-8", sha, "infra/dns")
    assert first != workdir_for(tmp_path, 42, "pr-7", "b" * 40, "infra/dns")
    with pytest.raises(ValueError, match="SHA"):
        workdir_for(tmp_path, 42, "pr-7", "../../etc", "p")


@given(st.text(min_size=0, max_size=80), st.text(min_size=0, max_size=80))
def test_workdir_stays_under_root_whatever_the_names(ref: str, project: str) -> None:
    root = Path("/srv/plangate")
    path = workdir_for(root, 1, ref, "c" * 40, project)
    assert path.parent.parent.parent.parent == root
    assert all(part not in ("", ".", "..") and "/" not in part for part in path.relative_to(root).parts)


def test_job_workdir_is_fresh_and_removed_afterwards(tmp_path: Path) -> None:
    args = (tmp_path, 42, "pr-7", "d" * 40, "dns")
    with job_workdir(*args) as one, job_workdir(*args) as two:
        assert one != two and one.parent == two.parent == workdir_for(*args)
        (one / "plan.out").write_text("x")
    assert not one.exists() and not two.exists()
    assert tmp_path.exists() and list(tmp_path.iterdir()) == []
    with pytest.raises(RuntimeError, match="boom"), job_workdir(*args) as three:
        raise RuntimeError("boom")
    assert not three.exists()


def test_remote_head_reads_the_branch_tip(tmp_path: Path) -> None:
    from workers.adapters.checkout import remote_head

    bare = tmp_path / "origin.git"
    subprocess.run(["git", "init", "--bare", "-q", "-b", "main", str(bare)], check=True)
    work = tmp_path / "work"
    subprocess.run(["git", "clone", "-q", str(bare), str(work)], check=True, capture_output=True)
    (work / "f").write_text("x")
    git_env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "a",
        "GIT_AUTHOR_EMAIL": "a@x",
        "GIT_COMMITTER_NAME": "a",
        "GIT_COMMITTER_EMAIL": "a@x",
    }
    subprocess.run(["git", "-C", str(work), "add", "f"], check=True)
    subprocess.run(["git", "-C", str(work), "commit", "-qm", "c"], check=True, env=git_env)
    subprocess.run(["git", "-C", str(work), "push", "-q", "origin", "HEAD:main"], check=True, capture_output=True)
    tip = subprocess.run(["git", "-C", str(work), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert remote_head(f"file://{bare}", "main", None, timeout=30) == tip
    with pytest.raises(CheckoutError, match="not found"):
        remote_head(f"file://{bare}", "nope", None, timeout=30)
