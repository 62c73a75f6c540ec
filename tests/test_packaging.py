"""What a user installs: the product wheel holds plangate only, works on its own, and guards its names."""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import plangate

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent


def _site_packages() -> str:
    return sysconfig.get_paths()["purelib"]


def _wheel(source: Path, into: Path) -> Path:
    """`pip wheel` as a packager runs it: an isolated build of a clean copy of the tree."""
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(into), str(source)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = into.glob("*.whl")
    return wheel


def _copy_of_the_tree(into: Path) -> Path:
    """The files git would commit (tracked and new, as they are now): no venv, caches or build leftovers."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
        text=True,
    ).stdout
    for name in filter(None, listed.split("\0")):
        source, target = ROOT / name, into / name
        if source.is_symlink() or source.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target, follow_symlinks=False)
    return into


@pytest.fixture(scope="module")
def installed_wheel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """The product wheel built from a copy of the tree, unpacked into a directory of its own."""
    work = tmp_path_factory.mktemp("wheel")
    wheel = _wheel(_copy_of_the_tree(work / "tree"), work / "dist")
    site = work / "site"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    yield wheel, site


def _run_installed(site: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """Python with only the unpacked wheel and the dependencies: no checkout, no editable finders, no stand-in."""
    env = {"PYTHONPATH": f"{site}:{_site_packages()}", "PATH": "/usr/bin:/bin", "HOME": str(site)}
    return subprocess.run([sys.executable, "-S", *argv], cwd=site, env=env, capture_output=True, text=True, timeout=60)


def test_the_product_wheel_holds_the_product_only(installed_wheel: tuple[Path, Path]) -> None:
    wheel, _ = installed_wheel
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert tops == {"bot", "workers", "plumbing", "core", "plangate.py"}
    assert "bot/app-manifest.yml" in names
    assert not [name for name in names if name.startswith(("tests/", "standin/", "benchmarks/"))]


def test_setup_reads_the_manifest_from_the_installed_package(installed_wheel: tuple[Path, Path]) -> None:
    _, site = installed_wheel
    probe = "from bot.setup import manifest; m = manifest('https://gate.example'); print(m['hook_attributes']['url'])"
    result = _run_installed(site, "-c", probe)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().startswith("https://gate.example/")


def test_the_installed_wheel_serves_every_page(installed_wheel: tuple[Path, Path]) -> None:
    """The templates are package data: the pages render from an install, with no checkout beside it."""
    wheel, site = installed_wheel
    templates = {f"bot/templates/{t.name}" for t in (ROOT / "bot" / "templates").glob("*.html")}
    assert {n for n in zipfile.ZipFile(wheel).namelist() if n.startswith("bot/templates/")} == templates
    static = {f"bot/static/{f.name}" for f in (ROOT / "bot" / "static").iterdir()}
    assert {n for n in zipfile.ZipFile(wheel).namelist() if n.startswith("bot/static/")} == static
    renders = (
        "import bot, pathlib; assert pathlib.Path(bot.__file__).is_relative_to(pathlib.Path.cwd());"
        "from bot import auth_pages, run_page, setup_pages, status_page;"
        "assert b'EventSource' in run_page._STATIC['live.js'][1];"
        "assert b'Signed out' in auth_pages.signed_out('/').body;"
        "assert b'Setup failed' in setup_pages.error(400, 'x').body;"
        "assert 'No runs yet.' in status_page.render_status_page([], {}, [], 0.0)"
    )
    result = _run_installed(site, "-c", renders)
    assert result.returncode == 0, result.stderr


def test_the_stand_in_is_its_own_distribution(installed_wheel: tuple[Path, Path]) -> None:
    wheel, _ = installed_wheel
    tree = wheel.parent.parent / "tree"
    wheel = _wheel(tree / "standin", tree / "standin-dist")
    names = zipfile.ZipFile(wheel).namelist()
    assert {name.split("/")[0] for name in names if ".dist-info" not in name} == {"standin"}
    assert "standin/stack.py" in names and "standin/demo.py" in names


def test_plangate_packages_are_its_own_here() -> None:
    import importlib.metadata

    assert plangate.foreign_packages(importlib.metadata.packages_distributions(), plangate.HOME) == []


def test_another_distribution_claiming_a_name_is_named(tmp_path: Path) -> None:
    found = {
        "bot": ["plangate", "chatbot-kit"],
        "workers": ["plangate"],
        "plumbing": ["plangate"],
        "core": ["plangate"],
    }
    (problem,) = plangate.foreign_packages(found, plangate.HOME)
    assert problem == "'bot' is also installed by chatbot-kit"


def test_a_shadowing_package_stops_plangate_in_one_line(tmp_path: Path) -> None:
    """A `core` package earlier on the path would run instead of plangate's: refuse to start."""
    (tmp_path / "core").mkdir()
    (tmp_path / "core" / "__init__.py").write_text("")
    (tmp_path / "other-1.0.dist-info").mkdir()
    (tmp_path / "other-1.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: other\nVersion: 1.0\n")
    (tmp_path / "other-1.0.dist-info" / "top_level.txt").write_text("core\n")
    env = {"PYTHONPATH": f"{tmp_path}:{ROOT}:{_site_packages()}", "PATH": "/usr/bin:/bin"}
    result = subprocess.run(
        [sys.executable, "-S", "-m", "plangate", "gate", "--help"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1, result.stderr
    assert "'core' is also installed by other" in result.stderr
    assert f"'core' is imported from {tmp_path}" in result.stderr
    assert "virtualenv of its own" in result.stderr
