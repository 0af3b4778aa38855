"""The import contracts (import-linter, in ``make lint``) hold for the project — one-way
layers, a kernel that imports no app, engines that import neither app nor kernel, and no
import cycle anywhere — and each really fails when broken."""

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
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    assert f"{len(contracts['contracts'])} kept, 0 broken" in done.stdout


def _skeleton(root: Path, imports: dict[str, str]) -> None:
    """One tiny package per root package of the real contract, each importing what
    ``imports`` says; the real ``[tool.importlinter]`` table is copied verbatim."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    for package in config["root_packages"]:
        (root / package).mkdir()
        (root / package / "__init__.py").write_text(imports.get(package, ""))
    for package in (
        "loopx_site.core",
        "loopx_site.engines",
        "loopx_site.engines.search",
        "loopx_site.mcp",
    ):
        path = root.joinpath(*package.split("."))
        path.mkdir()
        (path / "__init__.py").write_text(imports.get(package, ""))
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
    path = importer.replace(".", "/") + "/__init__.py"
    _assert_breaks(tmp_path, path, f"import {imported}\n", "")


OK = {
    "turn_recall": "import hooks\nimport loopx_site.core\n",
    "hooks": "import loopx_site.core\n",
    "loopx_site.core": "import loopx_site.engines.search\n",
}


def _assert_breaks(
    root: Path, module: str, line: str, contract: str, extra: dict[str, str] | None = None
) -> None:
    """The skeleton (plus ``extra`` files) lints clean; adding ``line`` to ``module`` (a
    file under ``root``, created when new) breaks ``contract``."""
    _skeleton(root, OK)
    for path, text in (extra or {}).items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    clean = _lint(root, root)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    target = root / module
    target.write_text((target.read_text() if target.exists() else "") + line)
    broken = _lint(root, root)
    assert broken.returncode == 1, broken.stdout
    assert f"{contract} BROKEN".strip() in broken.stdout


@pytest.mark.parametrize("app", ["preferences", "reward_memory", "hooks", "turn_recall"])
def test_the_kernel_importing_any_app_breaks_the_kernel_contract(tmp_path, app):
    _assert_breaks(
        tmp_path, "loopx_site/core/__init__.py", f"import {app}\n", "the kernel imports no app"
    )


@pytest.mark.parametrize("imported", ["loopx_site.core", "reward_memory"])
def test_an_engine_importing_the_kernel_or_an_app_breaks_the_engine_contract(tmp_path, imported):
    _assert_breaks(
        tmp_path,
        "loopx_site/engines/search/__init__.py",
        f"import {imported}\n",
        "an engine imports no app and not the kernel",
    )


def test_a_cycle_between_kernel_modules_breaks_the_acyclic_contract(tmp_path):
    """The cycle the kernel had (``access`` -> ``api.auth`` -> ``services`` -> ``access``),
    rebuilt in miniature: each import alone is one-way and within the kernel."""
    _assert_breaks(
        tmp_path,
        "loopx_site/core/access.py",
        "from loopx_site.core.api import auth\n",
        "no import cycle between sibling modules or packages, anywhere",
        extra={
            "loopx_site/core/api/__init__.py": "",
            "loopx_site/core/api/auth.py": "from loopx_site.core import services\n",
            "loopx_site/core/services.py": "from loopx_site.core import access\n",
        },
    )


APPS = ("preferences", "reward_memory", "hooks", "turn_recall")


def _kernel_sources() -> dict[Path, str]:
    kernel = ROOT / "loopx_site" / "core"
    return {
        path: path.read_text() for path in kernel.rglob("*.py") if "migrations" not in path.parts
    }


def test_the_kernel_looks_up_no_app_model_by_label():
    """Import-linter sees imports only; a model looked up by its app label
    (``apps.get_model("reward_memory", …)``) is an edge it cannot see."""
    offenders = [
        str(path.relative_to(ROOT))
        for path, text in _kernel_sources().items()
        if "get_model(" in text and any(f'"{app}"' in text for app in APPS)
    ]
    assert offenders == []
