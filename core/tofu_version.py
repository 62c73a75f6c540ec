"""Which release a `tofu version -json` answer names, and whether that release writes a shared plugin
cache safely beside other inits (pure).

OpenTofu 1.10 made TF_PLUGIN_CACHE_DIR safe for concurrent inits: "The shared provider cache (set via
the `TF_PLUGIN_CACHE_DIR` environment variable) now includes filesystem-level locking, making it safe to
use with concurrent OpenTofu operations" (https://opentofu.org/blog/help-us-test-opentofu-1-10-0-beta1/),
and "only Tofu (versions 1.10.0 and higher) supports concurrent use of the cache; Terraform doesn't
support concurrent use at all" (https://docs.otf.ninja/caching). Each install into the cache takes an
flock on `<provider>/<version>/<platform>.lock` there and looks for the entry again once it holds it,
so an init that waited links what the other installed; linking from the cache takes no lock (read in
v1.10.5's internal/providercache). 1.10.0 to 1.10.4 gave up after waiting 60 s for an entry's lock and
failed the init ("unable to acquire file lock ...: resource temporarily unavailable", opentofu#2967,
#3089); 1.10.5 waits: "Fixed issue where usage of TF_PLUGIN_CACHE_DIR could result in unexpected lock
contention errors (#3090)" (https://github.com/opentofu/opentofu/releases/tag/v1.10.5). So plangate
counts on it from 1.10.5.

Anything this cannot read is "not known safe": the caller keeps its own lock.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

CONCURRENT_CACHE_SINCE = (1, 10, 5)

# Semantic versioning's form; [0-9], not \d, which also matches other scripts' digits.
_SEMVER = re.compile(
    r"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?", re.ASCII
)


@dataclass(frozen=True)
class Release:
    core: tuple[int, int, int]  # major, minor, patch
    prerelease: bool  # "1.10.5-rc1" comes before 1.10.5


def parse_version_json(answer: bytes | str) -> Release | None:
    """The release in `version -json`'s `terraform_version` (tofu and terraform both name it so),
    None for anything else: not JSON, not an object, no such string, not `MAJOR.MINOR.PATCH[-pre][+build]`."""
    try:
        doc = json.loads(answer)
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        return None
    written = doc.get("terraform_version") if isinstance(doc, dict) else None
    match = _SEMVER.fullmatch(written) if isinstance(written, str) else None
    if match is None:
        return None
    return Release((int(match[1]), int(match[2]), int(match[3])), match[4] is not None)


def tofu_locks_its_cache(answer: bytes | str) -> bool:
    """Does the OpenTofu whose `tofu version -json` printed `answer` lock its plugin cache itself?
    A pre-release of the first release that does is not counted: it may predate the fix."""
    release = parse_version_json(answer)
    if release is None:
        return False
    return release.core > CONCURRENT_CACHE_SINCE or (release.core == CONCURRENT_CACHE_SINCE and not release.prerelease)
