"""The one-way dependency contract (import-linter, in ``make lint``) holds for the
project, and it really fails when a lower app imports a higher one."""

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT = Path(sys.executable).with_name("lint-imports")
pytestmark = [
    pytest.mark.slow,  # runs lint-imports in subprocesses
    pytest.mark.skipif(
        not LINT.exists() and os.environ.get("CI") != "true",  # CI must run it
        reason="import-linter is not installed (pip install -r requirements.txt)",
    ),
]


def _lint(cwd: Path, pythonpath: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(LINT), "--no-cache"],
        cwd=cwd,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(pythonpath)},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_project_keeps_its_layers():
    done = _lint(ROOT, ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 kept, 0 broken" in done.stdout


def _skeleton(root: Path, imports: dict[str, str]) -> None:
    """One tiny package per root package of the real contract, each importing what
    ``imports`` says; the real ``[tool.importlinter]`` table is copied verbatim."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    for package in config["root_packages"]:
        (root / package).mkdir()
        (root / package / "__init__.py").write_text(imports.get(package, ""))
    (root / "loopx_site" / "core").mkdir()
    (root / "loopx_site" / "core" / "__init__.py").write_text("")
    shutil.copy(ROOT / "pyproject.toml", root / "pyproject.toml")


@pytest.mark.parametrize(
    ("importer", "imported"),
    [
        ("hooks", "turn_recall"),  # a middle app importing the top
        ("reward_memory", "preferences"),  # one middle app importing another
        ("loopx_site.core", "hooks"),  # the kernel importing an app
    ],
)
def test_a_lower_app_importing_a_higher_one_breaks_the_contract(tmp_path, importer, imported):
    ok = {
        "turn_recall": "import hooks\nimport loopx_site.core\n",
        "hooks": "import loopx_site.core\n",
    }
    _skeleton(tmp_path, ok)
    assert _lint(tmp_path, tmp_path).returncode == 0
    target = tmp_path.joinpath(*importer.split(".")) / "__init__.py"
    target.write_text(target.read_text() + f"import {imported}\n")
    broken = _lint(tmp_path, tmp_path)
    assert broken.returncode == 1, broken.stdout
    assert "BROKEN" in broken.stdout
