"""Provider binaries that come from the checkout itself (I/O, read before `init`).

A repository that commits `terraform.d/plugins` (an implied local mirror), `.terraform/providers` or
`.terraform/plugins` brings its own provider binaries: terraform runs them at plan and again at apply,
with the apply's credentials, and nothing of that shows in the plan. So does an operator's CLI
configuration (TF_CLI_CONFIG_FILE) whose `filesystem_mirror` or `dev_overrides` path is relative (to
the project directory terraform runs in) or lies inside the checkout. Each is a CodeRun, its digest
over the relative paths and SHA-256 of every file there, so an approval names exactly those files.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from pathlib import Path

from core.cli_config import provider_paths
from core.plan_code import CodeRun
from core.plan_json import digest

# Provider directories terraform/tofu read from the directory they run in.
COMMITTED = ("terraform.d/plugins", ".terraform/providers", ".terraform/plugins")


def checkout_code_runs(checkout: Path, project_dir: Path, env: Mapping[str, str]) -> tuple[CodeRun, ...]:
    """The CodeRuns of providers from inside `checkout` for the project at `project_dir` (inside it),
    run with `env` (the terraform environment, where TF_CLI_CONFIG_FILE may be)."""
    where = project_dir.relative_to(checkout).as_posix()
    runs: dict[str, CodeRun] = {}
    for relative in COMMITTED:
        if os.path.lexists(project_dir / relative):
            key = f"run providers from {relative}"
            what = f"provider binaries committed at {where}/{relative} (run at plan and apply)"
            runs[key] = CodeRun(key, what, digest({"path": relative, "files": _files(checkout, project_dir, relative)}))
    cli_config = env.get("TF_CLI_CONFIG_FILE")
    if cli_config:
        for run in _configured(checkout, project_dir, Path(cli_config)):
            runs.setdefault(run.key, run)
    return tuple(runs.values())


def _configured(checkout: Path, project_dir: Path, cli_config: Path) -> list[CodeRun]:
    """The CLI configuration's provider directories inside the checkout; one that cannot be read fails
    closed (a CodeRun), and so does the configuration file itself lying in the checkout."""
    path = cli_config if cli_config.is_absolute() else project_dir / cli_config
    runs = []
    if _inside(checkout, path):  # the repository writes the whole provider installation
        files = _files(checkout, project_dir, str(cli_config))
        what = f"the CLI config (TF_CLI_CONFIG_FILE {cli_config}) is a file of the checkout"
        runs.append(CodeRun("run providers as the checkout's CLI config says", what, digest({"files": files})))
    try:
        found = provider_paths(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return runs
    except (OSError, UnicodeDecodeError, ValueError) as e:
        key = "run providers from an unreadable CLI config"
        return [*runs, CodeRun(key, f"TF_CLI_CONFIG_FILE {cli_config} cannot be read: {e}", digest(str(e)))]
    for what, written in found:
        target = Path(written)
        if target.is_absolute() and not _inside(checkout, target):
            continue
        key = f"run providers from {written} ({what} of the CLI config)"
        files = _files(checkout, project_dir, written)
        text = f"provider binaries at {written}, inside the checkout ({what} of the CLI config)"
        runs.append(CodeRun(key, text, digest({"path": written, "files": files})))
    return runs


def _inside(checkout: Path, path: Path) -> bool:
    """Does `path` lie in the checkout, as written or with its symlinks followed?"""
    roots = (Path(os.path.abspath(checkout)), checkout.resolve())
    candidates = (Path(os.path.abspath(path)), path.resolve())
    return any(c == r or r in c.parents for c in candidates for r in roots)


def _files(checkout: Path, project_dir: Path, written: str) -> list[list[str]]:
    """[path, "file", sha256] or [path, "link", target], paths relative to the checkout, for each symlink
    on the way to `written` (from `project_dir`) and everything under it: symlinks are recorded, never
    followed, and only what lies inside the checkout is read."""
    root = Path(os.path.abspath(checkout))
    target = Path(os.path.abspath(project_dir / written))
    entries = [
        [step.relative_to(root).as_posix(), "link", os.readlink(step)]
        for step in (*reversed(target.parents), target)
        if root in step.parents and step.is_symlink()
    ]
    top = target.resolve()
    if not _inside(checkout, top) or root not in target.parents:
        return entries
    if top.is_file():
        return [*entries, [target.relative_to(root).as_posix(), "file", _sha256(top)]]
    for directory, dirs, names in os.walk(top):
        for name in [*dirs, *names]:
            path = Path(directory) / name
            shown = (target / path.relative_to(top)).relative_to(root).as_posix()
            if path.is_symlink():
                entries.append([shown, "link", os.readlink(path)])
            elif path.is_file():
                entries.append([shown, "file", _sha256(path)])
    return sorted(entries)


def _sha256(path: Path) -> str:
    try:
        with path.open("rb") as f:
            return hashlib.file_digest(f, "sha256").hexdigest()
    except OSError as e:
        return f"unreadable: {e.strerror}"
