"""A project's plan inputs and the carry decision (core.inputs): what a push must re-plan."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from core.inputs import FileIndex, Footing, LastPlan, carried, fingerprint, input_paths, module_dirs
from core.projects import Project, matches_any, under
from workers.flows.carry import digest_all

FILES = [
    ".plangate.yml",
    "README.md",
    "infra/dns/main.tf",
    "infra/dns/records.json",
    "infra/dns/nested/policy.tpl",
    "infra/dns/.terraform.lock.hcl",
    "infra/web/main.tf",
    "modules/zone/main.tf",
    "modules/zone/templates/soa.tpl",
    "modules/base/main.tf",
    "modules/unused/main.tf",
    "shared/tags.tfvars",
]
SOURCES = {"infra/dns": ["../../modules/zone"], "modules/zone": ["../base"], "modules/base": ["../zone"]}
DNS = Project("dns", "infra/dns")
HEAD = Footing("head", "terraform", "")


def test_a_projects_inputs_are_its_dir_its_modules_through_other_modules_and_the_config() -> None:
    assert module_dirs("infra/dns", SOURCES) == {"infra/dns", "modules/zone", "modules/base"}  # a cycle ends
    assert input_paths(DNS, FILES, SOURCES) == [
        ".plangate.yml",
        "infra/dns/.terraform.lock.hcl",
        "infra/dns/main.tf",
        "infra/dns/nested/policy.tpl",
        "infra/dns/records.json",
        "modules/base/main.tf",
        "modules/zone/main.tf",
        "modules/zone/templates/soa.tpl",
    ]


def test_when_modified_globs_that_climb_out_of_the_dir_are_inputs_too() -> None:
    web = Project("web", "infra/web")
    assert input_paths(web, FILES, SOURCES) == [".plangate.yml", "infra/web/main.tf"]
    assert "shared/tags.tfvars" in input_paths(web, FILES, SOURCES, ("../../shared/*.tfvars",))


def test_the_root_project_reads_every_file() -> None:
    assert input_paths(Project(".", "."), FILES, {}) == sorted(FILES)


def _digests(**changed: str) -> dict[str, str]:
    return {f: changed.get(f, "d-" + f) for f in FILES}


def _fp(project: Project = DNS, footing: Footing = HEAD, **changed: str) -> str:
    return fingerprint(project, _digests(**changed), input_paths(project, FILES, SOURCES), footing)


def test_the_fingerprint_moves_with_any_input_and_nothing_else() -> None:
    same = _fp()
    assert _fp() == same
    assert fingerprint(DNS, {**_digests(), "README.md": "edited"}, input_paths(DNS, FILES, SOURCES), HEAD) == same
    for path in input_paths(DNS, FILES, SOURCES):
        assert fingerprint(DNS, {**_digests(), path: "edited"}, input_paths(DNS, FILES, SOURCES), HEAD) != same, path


def test_the_fingerprint_moves_with_the_projects_settings_and_footing() -> None:
    same = _fp()
    assert _fp(replace(DNS, workspace="staging")) != same
    assert _fp(replace(DNS, tool="tofu")) != same
    assert _fp(footing=Footing("merge:" + "a" * 40, "terraform", "")) != same
    assert _fp(footing=Footing("head", "tofu", "")) != same
    assert _fp(footing=Footing("head", "terraform", "b" * 40)) != same  # main applied it since


def test_a_file_added_to_an_input_dir_or_renamed_moves_the_fingerprint() -> None:
    paths = input_paths(DNS, FILES, SOURCES)
    same = fingerprint(DNS, _digests(), paths, HEAD)
    more = input_paths(DNS, [*FILES, "infra/dns/extra.tf"], SOURCES)
    assert fingerprint(DNS, {**_digests(), "infra/dns/extra.tf": "x"}, more, HEAD) != same
    renamed = [p.replace("records.json", "records2.json") for p in paths]
    digests = {**_digests(), "infra/dns/records2.json": _digests()["infra/dns/records.json"]}
    assert fingerprint(DNS, digests, renamed, HEAD) != same


@given(st.dictionaries(st.sampled_from(FILES), st.text(min_size=1, max_size=8)))
def test_equal_fingerprints_mean_equal_inputs(edits: dict[str, str]) -> None:
    paths = input_paths(DNS, FILES, SOURCES)
    edited = {**_digests(), **edits}
    touched = any(edited[p] != _digests()[p] for p in paths)
    assert (fingerprint(DNS, edited, paths, HEAD) != _fp()) == touched


def test_only_unchanged_projects_with_a_last_plan_are_carried() -> None:
    web, gone = Project("web", "infra/web"), Project("old", "infra/old", destroy_from="c" * 40)
    last = {
        DNS.identity: LastPlan("fp-dns", "job-1", "a" * 40),
        web.identity: LastPlan("fp-web-old", "job-2", "a" * 40),
        gone.identity: LastPlan("fp-old", "job-3", "a" * 40),
    }
    now = {DNS.identity: "fp-dns", web.identity: "fp-web-new", gone.identity: "fp-old"}
    assert carried([DNS, web, gone], now, last) == {DNS.identity: last[DNS.identity]}
    assert carried([DNS], {}, last) == {}  # no fingerprint: planned
    assert carried([DNS], now, {}) == {}  # no last plan: planned


def test_a_symlinked_input_is_read_through_the_link_only_inside_the_checkout(tmp_path: Path) -> None:
    work, outside = tmp_path / "work", tmp_path / "secret.txt"
    (work / "infra").mkdir(parents=True)
    (work / "shared.tf").write_text("a")
    outside.write_text("x")
    (work / "infra" / "shared.tf").symlink_to("../shared.tf")
    (work / "infra" / "leak.txt").symlink_to(outside)
    (work / "infra" / "loop.tf").symlink_to("loop.tf")  # resolves to nothing: its name is its digest
    paths = ["infra/leak.txt", "infra/loop.tf", "infra/shared.tf"]

    def digests() -> dict[str, str]:
        found: dict[str, str] = {}
        digest_all(work, paths, found)
        return found

    before = digests()
    (work / "shared.tf").write_text("b")  # the link's target changed: so did the input
    after = digests()
    assert after["infra/shared.tf"] != before["infra/shared.tf"]
    outside.write_text("y")  # outside the checkout: never read, so never part of the digest
    assert digests()["infra/leak.txt"] == after["infra/leak.txt"] == f"link:{outside}:"
    assert after["infra/loop.tf"] == "link:loop.tf:"


_PART = st.sampled_from(["a", "b", "ab", "a.b", ".plangate.yml", "main.tf", ""])
_PATH = st.lists(_PART, min_size=1, max_size=4).map("/".join)


@given(
    files=st.lists(_PATH, max_size=30),
    project_dir=st.one_of(st.just("."), _PATH),
    sources=st.dictionaries(_PATH, st.lists(st.sampled_from(["../a", "../../b", "./ab", "a"]), max_size=2), max_size=4),
    when=st.lists(st.sampled_from(["*.tf", "../*.tf", "../../a/*", "**/*.tfvars"]), max_size=2).map(tuple),
)
def test_the_file_index_finds_exactly_what_testing_every_file_finds(
    files: list[str], project_dir: str, sources: dict[str, list[str]], when: tuple[str, ...]
) -> None:
    """The index (built once per commit for all of a monorepo's projects) against the definition."""
    project = Project("p", project_dir)
    dirs = module_dirs(project_dir, sources)
    climbing = [p for p in when if ".." in p.split("/")]
    expected = sorted(
        {
            f
            for f in files
            if f == ".plangate.yml"
            or any(under(f, d) for d in dirs)
            or (climbing and matches_any(project_dir, climbing, f))
        }
    )
    assert FileIndex(files).input_paths(project, sources, when) == expected
