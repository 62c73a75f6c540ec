"""The environment terraform/tofu runs with, built from scratch, and which of the two tools to run.

Rule for PLANGATE_TF_ENV (comma-separated names or fnmatch globs, case-sensitive):
- a glob never matches a name in the bot's own namespaces: GITHUB_*, PLANGATE_*, REDIS_*. So
  `AWS_*,GITHUB_*` passes the AWS credentials and nothing of the bot's GitHub/Redis configuration;
- an exact name passes that variable (so `GITHUB_TOKEN` for the github provider can be named), except
  the bot's own secrets and settings, which never pass: GITHUB_APP_PRIVATE_KEY,
  GITHUB_APP_PRIVATE_KEY_PATH, GITHUB_WEBHOOK_SECRET, GITHUB_APP_ID, REDIS_URL and every PLANGATE_*;
- PATH, HOME, TF_IN_AUTOMATION, TF_INPUT, TF_PLUGIN_CACHE_DIR and CHECKPOINT_DISABLE are set by
  plangate and cannot be overridden.
"""

from __future__ import annotations

import fnmatch
import os
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path

TOOLS = ("tofu", "terraform")  # detection order: tofu first
RESERVED_PREFIXES = ("GITHUB_", "PLANGATE_", "REDIS_")
NEVER_PASSED = frozenset(
    {
        "GITHUB_APP_PRIVATE_KEY",
        "GITHUB_APP_PRIVATE_KEY_PATH",
        "GITHUB_WEBHOOK_SECRET",
        "GITHUB_APP_ID",
        "REDIS_URL",
    }
)
FIXED = frozenset({"PATH", "HOME", "TF_IN_AUTOMATION", "TF_INPUT", "TF_PLUGIN_CACHE_DIR", "CHECKPOINT_DISABLE"})
_GLOB_CHARS = frozenset("*?[")


class ToolNotFoundError(RuntimeError):
    """The requested terraform/tofu binary is not installed (or is not a known tool)."""


def parse_passthrough(value: str) -> list[str]:
    """`"AWS_*, TF_VAR_region"` → `["AWS_*", "TF_VAR_region"]` (blank items dropped)."""
    return [item.strip() for item in value.split(",") if item.strip()]


def _never_passed(name: str) -> bool:
    return name in NEVER_PASSED or name.startswith("PLANGATE_")


def passed_names(patterns: Iterable[str], names: Iterable[str]) -> list[str]:
    """The names that the patterns let through, by the rule in this module's docstring."""
    exact = {p for p in patterns if not _GLOB_CHARS & set(p)}
    globs = [p for p in patterns if _GLOB_CHARS & set(p)]
    chosen = []
    for name in names:
        if _never_passed(name) or name in FIXED:
            continue
        if name in exact or (
            not name.startswith(RESERVED_PREFIXES) and any(fnmatch.fnmatchcase(name, g) for g in globs)
        ):
            chosen.append(name)
    return sorted(chosen)


def build_env(
    *, passthrough: list[str], source_env: Mapping[str, str], home: Path, plugin_cache: Path
) -> dict[str, str]:
    """A from-scratch environment: the fixed terraform settings plus only the passed-through names."""
    env = {name: source_env[name] for name in passed_names(passthrough, source_env)}
    env.update(
        PATH=source_env.get("PATH") or os.defpath,
        HOME=str(home),
        TF_IN_AUTOMATION="1",
        TF_INPUT="0",
        TF_PLUGIN_CACHE_DIR=str(plugin_cache),
        CHECKPOINT_DISABLE="1",
    )
    return env


def detect_tool(preferred: str | None, *, path: str | None = None) -> str:
    """ "tofu" or "terraform": the preferred one (which must be installed), else the first installed."""
    if preferred is not None:
        if preferred not in TOOLS:
            raise ToolNotFoundError(f"unknown tool {preferred!r} (expected tofu or terraform)")
        if shutil.which(preferred, path=path) is None:
            raise ToolNotFoundError(f"{preferred} is not installed (not found on PATH)")
        return preferred
    for tool in TOOLS:
        if shutil.which(tool, path=path) is not None:
            return tool
    raise ToolNotFoundError("neither tofu nor terraform is installed (not found on PATH)")
