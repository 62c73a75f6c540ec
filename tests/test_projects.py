"""Project selection: glob semantics, path normalization, autodiscovery with local modules."""

from __future__ import annotations

import fnmatch
import posixpath

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.config import parse_config
from core.projects import (
    Project,
    ProjectSelection,
    anchor_glob,
    deleted_projects,
    find_projects,
    glob_regex,
    identity_label,
    identity_name,
    local_module_sources,
    matches_any,
    may_delete_projects,
    normalize_path,
)

# --- glob ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("*.tf", "main.tf", True),
        ("*.tf", "a/main.tf", False),
        ("*.tf", ".hidden.tf", True),
        ("*.tf*", "x.tfvars", True),
        ("*.tf*", "x.tf.json", True),
        ("**/*.tf", "main.tf", True),
        ("**/*.tf", "a/b/c/main.tf", True),
        ("**/*.tf", "a/b/c/main.tfx", False),
        ("a/**", "a/x", True),
        ("a/**", "a/x/y/z", True),
        ("a/**", "ab/x", False),
        ("a/**", "b/a/x", False),
        ("a/**/b", "a/b", True),
        ("a/**/b", "a/x/y/b", True),
        ("a/**/b", "a/xb", False),
        ("**", "anything/at/all", True),
        ("a**b", "axxb", True),
        ("a**b", "ax/xb", False),
        ("?.tf", "a.tf", True),
        ("?.tf", "/.tf", False),
        ("?.tf", "ab.tf", False),
        ("[ab].tf", "a.tf", True),
        ("[ab].tf", "c.tf", False),
        ("[!ab].tf", "c.tf", True),
        ("[!ab].tf", "a.tf", False),
        ("[a-c]x", "bx", True),
        ("x[]]", "x]", True),
        ("[!]]", "a", True),
        ("[!]]", "]", False),
        ("[z-a]", "[z-a]", False),  # a reversed range matches nothing (as in bash)
        ("x[", "x[", True),
        ("a.b", "axb", False),  # regex metacharacters are literal
        ("(a)+", "(a)+", True),
        ("a*/b", "ax/b", True),
        ("a*/b", "a/x/b", False),
    ],
)
def test_glob_table(pattern: str, path: str, expected: bool) -> None:
    assert bool(glob_regex(pattern).fullmatch(path)) is expected


_seg_chars = st.sampled_from("ab.-_*?")


# A name a path segment can have: normalize_path leaves no empty, `.` or `..` one.
_name = st.text(st.sampled_from("ab.-_"), min_size=1, max_size=8).filter(lambda s: s not in (".", ".."))


@given(st.text(_seg_chars, max_size=8), _name)
def test_single_segment_globs_agree_with_fnmatch(pattern: str, name: str) -> None:
    assert bool(glob_regex(pattern).fullmatch(name)) == fnmatch.fnmatchcase(name, pattern)


_segment = st.text(st.sampled_from("abc.x"), min_size=1, max_size=4).filter(lambda s: s not in (".", ".."))
_rel_path = st.lists(_segment, min_size=1, max_size=5).map("/".join)
_glob_seg = st.one_of(_segment, st.sampled_from(["*", "**", "?", "*.x", "a*", "[ab]*", "[!c]"]))
_glob = st.lists(_glob_seg, min_size=1, max_size=5).map("/".join)


@given(_glob, _rel_path)
def test_star_never_crosses_a_slash(pattern: str, path: str) -> None:
    if "**" not in pattern and glob_regex(pattern).fullmatch(path):
        assert pattern.count("/") == path.count("/")


@given(st.lists(_segment, max_size=3).map(lambda s: "/".join(s) or "."), _glob, _rel_path)
def test_globs_without_dotdot_never_match_outside_the_project(project_dir: str, pattern: str, path: str) -> None:
    if matches_any(project_dir, [pattern], path):
        assert project_dir == "." or path.startswith(project_dir + "/")


@given(st.lists(_segment, min_size=1, max_size=3).map("/".join), _rel_path)
def test_double_star_matches_everything_under_the_project(project_dir: str, rest: str) -> None:
    assert matches_any(project_dir, ["**"], f"{project_dir}/{rest}")
    assert matches_any(project_dir, ["**/*"], f"{project_dir}/{rest}")


@given(
    st.lists(_segment, min_size=1, max_size=4).map("/".join),
    st.integers(min_value=1, max_value=6),
    _rel_path,
)
def test_dotdot_climbs_but_never_leaves_the_repository(project_dir: str, ups: int, path: str) -> None:
    pattern = "../" * ups + "**"
    depth = project_dir.count("/") + 1
    anchored = anchor_glob(project_dir, pattern)
    if ups > depth:
        assert anchored is None
        assert not matches_any(project_dir, [pattern], path)
    else:
        base = posixpath.normpath(posixpath.join(project_dir, *([".."] * ups)))
        assert anchored == ("**" if base == "." else f"{base}/**")
        assert matches_any(project_dir, [pattern], path) == (base == "." or path.startswith(base + "/"))


@pytest.mark.parametrize(
    ("project_dir", "pattern", "path", "expected"),
    [
        ("infra/dns", "../modules/**", "infra/modules/x/main.tf", True),
        ("infra/dns", "../modules/**", "modules/x/main.tf", False),
        ("infra/dns", "../../modules/**", "modules/x/main.tf", True),
        ("infra/dns", "../../../modules/**", "modules/x/main.tf", False),
        ("infra/dns", "*.tf", "infra/dns/main.tf", True),
        ("infra/dns", "*.tf", "infra/dns/sub/main.tf", False),
        ("infra/dns", "./*.tf", "infra/dns/main.tf", True),
        ("infra/dns", "*.tf", "./infra/dns/../dns/main.tf", True),
        ("infra/dns", "*.tf", "infra/dnsx/main.tf", False),
        ("infra/dns", "**/*.tf*", "infra/dns/a/b/vars.tfvars", True),
        ("infra/dns", "**/.terraform.lock.hcl", "infra/dns/.terraform.lock.hcl", True),
        (".", "*.tf", "main.tf", True),
        (".", "*.tf", "a/main.tf", False),
        (".", "..", "main.tf", False),
        (".", "/etc/*", "etc/passwd", False),
        ("a", "*.tf", "../a/main.tf", False),
        ("a", "*.tf", "/a/main.tf", False),
    ],
)
def test_anchored_matching(project_dir: str, pattern: str, path: str, expected: bool) -> None:
    assert matches_any(project_dir, [pattern], path) is expected


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("a/b", "a/b"),
        ("./a//b/", "a/b"),
        ("a/../b", "b"),
        ("a/..", "."),
        ("..", None),
        ("a/../../b", None),
        ("/a", None),
        ("", None),
        ("a\0b", None),
    ],
)
def test_normalize_path(path: str, expected: str | None) -> None:
    assert normalize_path(path) == expected


@given(st.lists(st.sampled_from(["a", "b", "..", ".", ""]), max_size=8).map("/".join))
def test_normalized_paths_stay_inside(path: str) -> None:
    norm = normalize_path(path)
    if norm is not None:
        assert not norm.startswith(("/", "../")) and norm != ".."
        assert normalize_path(norm) == norm


# --- local module sources --------------------------------------------------------------------

HCL = """
module "vpc" {
  source = "../modules/vpc"
  cidr   = "10.0.0.0/16"
  tags = {
    source = "./not-a-module-source"
  }
}

module "remote" {
  source  = "terraform-aws-modules/vpc/aws"
  version = "5.0.0"
}

# module "commented" {
#   source = "./commented"
# }
/* module "blocked" { source = "./blocked" } */

module "inline" { source = "./inline" }

module "interp" {
  name   = "${var.prefix}-{x}"
  source = "./modules/interp/"
  providers = {
    aws = aws.east
  }
}

module git {
  source = "git::https://example.com/m.git"
}

resource "terraform_data" "source" {
  input = { source = "./nope" }
}
"""


def test_local_module_sources() -> None:
    assert local_module_sources(HCL) == ["../modules/vpc", "./inline", "./modules/interp/"]


def test_local_module_sources_empty() -> None:
    assert local_module_sources("") == []
    assert local_module_sources('resource "x" "y" {}\n') == []
    assert local_module_sources('module "x" {\n  source = "./unterminated"\n') == ["./unterminated"]


# --- discovery --------------------------------------------------------------------------------

REPO = [
    "README.md",
    "infra/dns/main.tf",
    "infra/dns/records.yaml",
    "infra/dns/templates/zone.tpl",
    "infra/net/main.tf",
    "infra/net/.terraform/modules/x/main.tf",
    "infra/modules/zone/main.tf",
    "infra/modules/zone/records/main.tf",
    "infra/modules/unused-by-anyone/main.tf",
    "apps/web/main.tf.json",
    "docs/guide.md",
]
SOURCES = {
    "infra/dns": ["../modules/zone"],
    "infra/modules/zone": ["./records", "../../../outside"],
    "infra/net": ["./missing", "."],
}
AUTO = parse_config(None)


def _names(sel: ProjectSelection) -> list[str]:
    return [p.name for p in sel.projects]


@pytest.mark.parametrize(
    ("changed", "expected"),
    [
        (["infra/dns/main.tf"], ["infra/dns"]),
        (["infra/dns/records.yaml"], ["infra/dns"]),
        (["infra/dns/templates/zone.tpl"], ["infra/dns"]),
        (["infra/modules/zone/main.tf"], ["infra/dns"]),  # module: its user is planned
        (["infra/modules/zone/records/main.tf"], ["infra/dns"]),  # transitively
        (["infra/modules/unused-by-anyone/main.tf"], ["infra/modules/unused-by-anyone"]),  # nobody uses it: a root
        (["infra/net/main.tf", "apps/web/main.tf.json"], ["apps/web", "infra/net"]),
        (["README.md", "docs/guide.md", "infra/README.md"], []),
        ([], []),
        (["../infra/dns/main.tf", "/infra/net/main.tf"], []),
        (["infra/dns/../net/main.tf"], ["infra/net"]),
    ],
)
def test_autodiscovery(changed: list[str], expected: list[str]) -> None:
    sel = find_projects(AUTO, changed, REPO, SOURCES)
    assert _names(sel) == expected
    assert sel.changes_unknown is False
    assert all(p.dir == p.name and p.workspace == "default" and p.apply_on_merge for p in sel.projects)


def test_autodiscovery_unknown_changes_plans_every_root() -> None:
    sel = find_projects(AUTO, None, REPO, SOURCES)
    assert _names(sel) == ["apps/web", "infra/dns", "infra/modules/unused-by-anyone", "infra/net"]
    assert sel.changes_unknown is True


def test_root_dir_is_named_dot() -> None:
    files = ["main.tf", "modules/a/main.tf", "README.md", "stacks/x/main.tf"]
    sources = {".": ["./modules/a"], "stacks/x": ["../../modules/a"]}
    assert _names(find_projects(AUTO, ["README.md"], files, sources)) == ["."]
    assert _names(find_projects(AUTO, ["modules/a/variables.tf"], files, sources)) == [".", "stacks/x"]
    assert _names(find_projects(AUTO, ["stacks/x/main.tf"], files, sources)) == ["stacks/x"]


def test_module_cycles_terminate() -> None:
    files = ["a/main.tf", "b/main.tf", "root/main.tf"]
    sources = {"a": ["../b"], "b": ["../a"], "root": ["../a"]}
    assert _names(find_projects(AUTO, ["b/main.tf"], files, sources)) == ["root"]


def test_drift_schedule_is_inherited() -> None:
    cfg = parse_config("version: 1\ndrift: {schedule: '@daily'}\n")
    sel = find_projects(cfg, None, ["main.tf"], {})
    assert sel.projects == (Project(".", ".", drift_schedule="@daily"),)


# --- configured projects -------------------------------------------------------------------

CONFIG = parse_config(
    """\
version: 1
drift: {schedule: "0 * * * *"}
projects:
  - name: dns
    dir: infra/dns
    tool: tofu
    when_modified: ["*.tf", "*.tfvars", "../modules/**"]
    drift: {schedule: "@daily"}
  - name: net
    dir: infra/net
    workspace: prod
    apply_on_merge: false
  - name: manual
    dir: infra/manual
    when_modified: []
"""
)


@pytest.mark.parametrize(
    ("changed", "expected"),
    [
        (["infra/dns/main.tf"], ["dns"]),
        (["infra/dns/sub/main.tf"], []),  # "*.tf" stays in the project dir
        (["infra/dns/records.yaml"], []),
        (["infra/modules/zone/main.tf"], ["dns"]),
        (["infra/net/sub/deep/x.tf.json"], ["net"]),  # default globs reach into subdirs
        (["infra/net/.terraform.lock.hcl"], ["net"]),
        (["infra/net/main.tf", "infra/dns/prod.tfvars"], ["dns", "net"]),
        (["infra/manual/main.tf"], []),
        (["README.md"], []),
    ],
)
def test_configured_projects(changed: list[str], expected: list[str]) -> None:
    assert _names(find_projects(CONFIG, changed, [], {})) == expected


def test_configured_projects_carry_their_settings() -> None:
    sel = find_projects(CONFIG, None, [], {})
    assert sel.changes_unknown is True
    assert sel.projects == (
        Project("dns", "infra/dns", "default", "tofu", True, "@daily"),
        Project("net", "infra/net", "prod", None, False, "0 * * * *"),
        Project("manual", "infra/manual", "default", None, True, "0 * * * *"),
    )


def test_a_change_that_empties_a_projects_directory_deletes_it() -> None:
    base = (Project("dns", "infra/dns"), Project("web", "infra/web"), Project("app", "app", "staging"))
    head_files = ["infra/web/main.tf", "app/main.tf", "README.md"]
    changed = ["infra/dns/main.tf", "infra/dns/records.tf"]
    assert may_delete_projects(changed, head_files)
    assert not may_delete_projects(["infra/web/main.tf", "README.md"], head_files)
    assert may_delete_projects(None, head_files)  # unknown changes: look at the base
    gone = deleted_projects(base, head_files, changed, "b" * 40)
    assert [(p.name, p.destroy_from) for p in gone] == [("dns", "b" * 40)]
    assert gone[0].identity == base[0].identity  # approvals name it as before
    assert deleted_projects(base, head_files, ["README.md"], "b" * 40) == ()  # untouched: not this change
    everything = deleted_projects(base, ["README.md"], None, "b" * 40)
    assert [p.name for p in everything] == ["dns", "web", "app"]


def test_identities_tell_workspaces_and_dirs_apart() -> None:
    assert Project("app", "infra", "staging").identity == "app@staging:infra"
    assert Project("app", "infra").identity != Project("app", "infra", "prod").identity
    assert identity_name("app@staging:infra") == "app" and identity_name("app") == "app"
    assert identity_label("app@staging:infra") == "app (workspace staging)"
    assert identity_label("app@default:x") == "app"
