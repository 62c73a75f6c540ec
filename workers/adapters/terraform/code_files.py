"""The files code that runs at apply can execute, folded into each code run's digest (I/O, after `plan`).

A provisioner's configuration in the plan's JSON says `command = "./deploy.sh"`, not what deploy.sh
holds. An approval of that code run must not cover a deploy.sh that another change rewrote since (a
re-plan on the test merge, or the merge's own plan). So every code run of a plan is bound, too, to the
contents of the project's directory and of every module directory `init` recorded
(`.terraform/modules/modules.json`), read as the apply will find them. Files outside those (a script a
provisioner reaches by `../..`) are not covered: review them with the Terraform code (docs/security.md).
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from core.plan import Plan

MODULES = Path(".terraform") / "modules" / "modules.json"


def bound_to_files(plan: Plan, logical_root: Path, own_root: Path, checkout: Path) -> Plan:
    """`plan` with each code run's digest covering the files it may execute. `logical_root`: the project
    directory as its paths resolve (local module sources are relative to it); `own_root`: where this
    job's copy of it, with `.terraform`, really is (the same directory on a private checkout);
    `checkout`: the commit's files, outside which nothing is read."""
    if not plan.code_runs:
        return plan
    files = files_digest(logical_root, own_root, checkout)
    runs = tuple(replace(r, digest=_fold(r.digest, files)) for r in plan.code_runs)
    return replace(plan, code_runs=runs)


def files_digest(logical_root: Path, own_root: Path, checkout: Path) -> str:
    """SHA-256 over every file (path, contents; a symlink by its target) of the project directory and of
    its modules' directories. Module records that cannot be read, or that name a directory outside the
    checkout and the job's own copy (the plan's code may have written them), bind to nothing that can
    match again: the worker reads no host file on their word."""
    digest = hashlib.sha256()
    for label, directory in _directories(logical_root, own_root, (checkout, own_root)):
        for relative, content in _files(directory):
            digest.update(f"{label}/{relative}\0".encode() + hashlib.sha256(content).digest())
    return digest.hexdigest()


def _fold(run: str, files: str) -> str:
    return hashlib.sha256(f"{run}:{files}".encode()).hexdigest()[:32]


def _directories(logical_root: Path, own_root: Path, within: tuple[Path, ...]) -> Iterator[tuple[str, Path]]:
    yield ".", own_root
    recorded = own_root / MODULES
    if not recorded.is_file() or recorded.is_symlink():
        return
    try:
        modules = json.loads(recorded.read_text()).get("Modules") or []
        dirs = sorted({str(m["Dir"]) for m in modules if m.get("Dir") not in (None, "", ".")})
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        yield f"unreadable {secrets.token_hex(8)}", own_root  # never the same digest twice: fail closed
        return
    roots = [r.resolve() for r in within]
    for relative in dirs:
        base = own_root if relative.startswith(".terraform") else logical_root
        directory = (base / relative).resolve()
        if not any(directory.is_relative_to(r) for r in roots):
            yield f"outside the checkout {secrets.token_hex(8)}", own_root  # fail closed, read nothing there
            continue
        yield relative, directory


def _files(directory: Path) -> Iterator[tuple[str, bytes]]:
    """(relative path, contents) of every file under `directory`, sorted; `.terraform` of the project
    itself (providers, state of init) is not the code under review, its modules are read on their own."""
    if not directory.is_dir():
        return
    found: list[tuple[str, Path]] = []
    for top, subdirs, names in os.walk(directory):
        subdirs[:] = sorted(d for d in subdirs if d != ".terraform")
        for name in names:
            path = Path(top) / name
            found.append((path.relative_to(directory).as_posix(), path))
    for relative, path in sorted(found):
        if path.is_symlink():
            yield relative, f"symlink to {os.readlink(path)}".encode()
        elif path.is_file():
            yield relative, path.read_bytes()
