"""`make demo` (`python -m standin.demo`): the whole loop offline, through the product's own processes and code paths.

A private Redis, the GitHub stand-in holding a sample repository, `plangate web` and a
`plangate worker`; then a story played against them and printed as a PR conversation.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from standin import sample
from standin.local_redis import private_redis
from standin.stack import Stack, running_stack
from standin.state import PullRequest, Repo

BOT = "plangate[bot]"
_HIDDEN = re.compile(r"<!--.*?-->", re.S)
_DETAILS = re.compile(r"<details>.*?</details>", re.S)


def say(text: str) -> None:
    print(text, flush=True)


def _readable(body: str, most: int = 24) -> str:
    """A comment as a person skims it in a terminal: no hidden markers, no collapsed plan text."""
    text = _DETAILS.sub("(plan output collapsed)", _HIDDEN.sub("", body)).strip()
    lines = [line for line in text.splitlines() if line.strip()]
    shown = lines[:most] + ([f"… ({len(lines) - most} more lines)"] if len(lines) > most else [])
    return "\n".join(f"    │ {line}" for line in shown)


def _state(path: Path) -> list[str]:
    if not path.exists():
        return []
    data = json.loads(path.read_text())
    return sorted(f"{r['type']}.{r['name']}" for r in data.get("resources", []) if r.get("mode") == "managed")


class Story:
    """Each step acts like a person on GitHub, then waits for plangate's answer and prints it."""

    def __init__(self, stack: Stack, state: Path) -> None:
        self.stack, self.gh, self.state = stack, stack.gh, state
        self.seen: set[int] = set()

    def bot_says(self, repo: Repo, number: int, what: str, count: int = 1) -> None:
        def fresh() -> list[str] | None:
            found = [c for c in self.gh.comments_on(repo, number) if c.user.login == BOT and c.id not in self.seen]
            return [c.body for c in found] if len(found) >= count else None

        for body in self.stack.wait_for(what, fresh, timeout=300):
            say(f"  @{BOT} commented:\n{_readable(body)}")
        self.seen |= {c.id for c in self.gh.comments_on(repo, number)}

    def status(self, repo: Repo, sha: str, context: str, final: bool = True) -> str:
        def probe() -> str | None:
            s = self.gh.reports(repo, sha).get(context)
            return f"{s.state}: {s.description}" if s and (not final or s.state != "pending") else None

        line = self.stack.wait_for(f"{context} on {sha[:7]}", probe, timeout=300)
        say(f"  status {context} on {sha[:7]} → {line}")
        return line

    def human(self, repo: Repo, pr: PullRequest, login: str, body: str) -> None:
        time.sleep(1.01 - time.time() % 1)  # people read the plan first; GitHub's clock ticks in seconds
        say(f"\n▶ @{login} comments on #{pr.number}: {body}")
        comment = self.gh.comment(repo, pr.number, login, body)
        self.seen.add(comment.id)
        self.bot_says(repo, pr.number, f"plangate's answer to @{login}")

        def closed() -> list[str] | None:
            reactions = self.gh.reactions_on(comment)
            return reactions if len(reactions) >= 2 else None

        reactions = self.stack.wait_for("the reactions", closed)
        say(f"  reactions on @{login}'s comment: {', '.join(reactions)}")

    def play(self) -> None:
        gh, state = self.gh, self.state
        say("\n== 1. A repository under plangate: the first push to main is applied ==")
        repo = gh.create_repo("acme", "infra", {"README.md": "# acme infra\n"})
        gh.set_permission(repo, "alice", "write")
        gh.set_permission(repo, "bob", "maintain")
        first = gh.push(repo, "main", sample.files(state, {"web": "v1", "legacy": "v1"}), "alice")
        self.status(repo, first, "plangate/apply")
        say(f"  state: {', '.join(_state(state))}")

        say("\n== 2. @alice opens a PR that adds `api` and removes `legacy` ==")
        pr = gh.open_pr(
            repo, "api", "alice", "Add the api, retire legacy", sample.files(state, {"web": "v1", "api": "v1"})
        )
        say(f"▶ PR #{pr.number} opened by @alice at {pr.head_sha[:7]}")
        self.bot_says(repo, pr.number, "the plan comment")
        self.status(repo, pr.head_sha, "plangate/plan")
        self.status(repo, pr.head_sha, "plangate/destroy")

        say("\n== 3. Who may approve the destroy ==")
        self.human(repo, pr, "alice", "/approve-destroy")
        self.human(repo, pr, "bob", "/approve-destroy")
        self.status(repo, pr.head_sha, "plangate/destroy")

        say("\n== 4. Merge: a fresh plan at the merge commit, checked against the approval, applied ==")
        before = _state(state)
        merged = gh.merge_pr(pr, method="merge", merged_by="bob")
        say(f"▶ @bob merges #{pr.number} → {merged[:7]} pushed to main")
        self.status(repo, merged, "plangate/apply")
        self.bot_says(repo, pr.number, "the apply result")
        say(f"\n  state before: {', '.join(before)}")
        say(f"  state after:  {', '.join(_state(state))}")


def _install(command: str, package: str, why: str) -> None:
    """Debian's package for a missing command when we may (root, apt); else the caller's check says so."""
    if shutil.which(command) is None and os.geteuid() == 0 and shutil.which("apt-get"):
        say(f"{command} is missing ({why}): installing Debian's {package}")
        subprocess.run(["apt-get", "install", "-y", "-qq", package], check=True, stdout=subprocess.DEVNULL)


@contextmanager
def _redis() -> Iterator[str]:
    if os.environ.get("REDIS_URL"):
        yield os.environ["REDIS_URL"]
        return
    _install("redis-server", "redis-server", "the queue")
    with private_redis() as url:
        yield url


class Stopped(BaseException):
    """SIGTERM or SIGHUP, raised where the demo is so that it unwinds as from Ctrl-C (and, like it, past
    any `except Exception`): every `with` below stops what it started (web, worker, Redis, the
    stand-in). Python's default for both signals is to die at once, leaving them all running."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _stop_on(*signums: signal.Signals) -> None:
    def stop(signum: int, frame: object) -> None:
        for each in signums:  # a second signal must not cut the cleanup short
            signal.signal(each, signal.SIG_IGN)
        raise Stopped(signum)

    for signum in signums:
        signal.signal(signum, stop)


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="python -m standin.demo",
        description="the whole loop offline: GitHub stand-in, sample repo, real terraform and Redis",
    )
    top.add_argument("--no-serve", action="store_true", help="exit after the story instead of serving the status page")
    top.add_argument("--workdir", help="keep everything (state, logs, stand-in repos) in this directory")
    top.add_argument("--port", type=int, default=0, help="port of the web process (default: a free one)")
    return top


def main(argv: list[str] | None = None) -> int:
    return run(parser().parse_args(argv))


def run(args: argparse.Namespace) -> int:
    """The demo, stopped cleanly by SIGTERM or SIGHUP as well as Ctrl-C."""
    _stop_on(signal.SIGTERM, signal.SIGHUP)
    try:
        return _run(args)
    except Stopped as stopped:
        say(f"\nstopped by {stopped} before the end")
        return 128 + stopped.signum


def _run(args: argparse.Namespace) -> int:
    if shutil.which("tofu") is None and shutil.which("terraform") is None:
        print("demo: neither tofu nor terraform is on PATH", file=sys.stderr)
        return 2
    _install("bwrap", "bubblewrap", "terraform runs in its sandbox")
    if shutil.which("bwrap") is None:
        print("demo: bwrap is not installed (Debian: apt-get install bubblewrap)", file=sys.stderr)
        return 2
    root = Path(args.workdir or tempfile.mkdtemp(prefix="plangate-demo-")).resolve()
    root.mkdir(parents=True, exist_ok=True)
    state = root / "state" / "terraform.tfstate"
    say(f"demo: working in {root}")
    with _redis() as redis_url, running_stack(root, redis_url, web_port=args.port) as stack:
        say(f"GitHub stand-in at {stack.env['GITHUB_API_URL']}; plangate web at {stack.web_url}; Redis at {redis_url}")
        Story(stack, state).play()
        say(f"\nState file: {state}")
        if not args.no_serve:
            stack.gh.sign_in_browser("bob")  # opening the page signs you in through the stand-in as @bob
            try:  # from the line on: a signal right after it still finds the demo serving
                say(f"\nStatus page: {stack.web_url}/  (you sign in with the stand-in's GitHub as @bob; Ctrl-C stops)")
                while True:
                    time.sleep(3600)
            except (KeyboardInterrupt, Stopped):
                say("\nstopping")
    return 0


if __name__ == "__main__":
    sys.exit(main())
