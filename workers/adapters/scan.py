"""Read what project discovery needs from a checkout: files, local module sources, `.plangate.yml`."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from core.projects import local_module_sources

CONFIG_FILE = ".plangate.yml"
MAX_TF_BYTES = 2 * 1024 * 1024  # a .tf file bigger than this is not hand-written config


@dataclass(frozen=True)
class RepoSnapshot:
    all_files: list[str]
    module_sources: Mapping[str, list[str]]
    config_text: str | None
    config_refused: str | None = None  # why `.plangate.yml` was not read (it names nothing of a target)


def scan(root: Path) -> RepoSnapshot:
    """Files and module sources of a checkout. Symlinks are never followed: a link to a file outside
    the checkout must not be read (its text could end up quoted in a comment)."""
    files: list[str] = []
    sources: dict[str, list[str]] = {}
    for current, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in (".git", ".terraform"))
        rel_dir = os.path.relpath(current, root)
        rel_dir = "." if rel_dir == "." else rel_dir.replace(os.sep, "/")
        for name in sorted(names):
            files.append(name if rel_dir == "." else f"{rel_dir}/{name}")
            path = Path(current) / name
            if (
                name.endswith(".tf")
                and not path.is_symlink()
                and path.is_file()
                and path.stat().st_size <= MAX_TF_BYTES
            ):
                found = local_module_sources(path.read_text(errors="replace"))
                if found:
                    sources.setdefault(rel_dir, []).extend(found)
    config = root / CONFIG_FILE
    if config.is_symlink():
        refused = "is a symlink; plangate reads only regular files inside the checkout"
        return RepoSnapshot(all_files=files, module_sources=sources, config_text=None, config_refused=refused)
    text = config.read_text(errors="replace") if config.is_file() else None
    return RepoSnapshot(all_files=files, module_sources=sources, config_text=text)
