"""README examples are tests.

Every ```sh block of README.md and of the manual's pages (``docs/*.md``, in the order of
the manual's index, ``docs/README.md``) runs, in order and as written, in ONE bash process (so
``M=…`` and other shell variables carry from line to line and block to block) against
a fresh database prepared exactly as ``make run`` prepares it (migrate + demo), with a
development server for the ``curl`` lines. What the harness does besides running the
text (README "README examples are tests" documents the same):

* ``make run`` / ``make test`` lines are not re-run: their set-up is the fixture.
* ``http://127.0.0.1:8000`` is the fixture's server (on a free port).
* Placeholders — after each command whose stdout is one JSON object, the harness sets
  ``$REV`` (the scope's revision after the command: ``resulting_revision``,
  ``current.revision``, ``view.revision`` or ``revision``; ``none`` when the document
  has a ``current``/``view`` without one; a preview leaves it), ``$TOKEN``
  (``token``), ``$REVIEW_ID`` (``review_id``) and ``$RECALL_ID`` (``recall_id``) for
  the commands after it. A reader copies the same values by hand.
* A command is expected to exit 0 unless its line ends with ``# expect exit N``.
* A literal ``…`` in an sh block is an error: sketches belong in ```text blocks.

A failure names the block (page and line), the command's line, the command, its exit
status and its stdout/stderr, so a README change that breaks an example is one read
away from its fix.
"""

import json
import os
import re
import shlex
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
MANUAL = ROOT / "docs" / "README.md"
FRONT_PAGE_MAX_BYTES = 16_000
BASE_URL = "http://127.0.0.1:8000"
SKIPPED = re.compile(r"^\s*make\s+(run|test)\b")
EXPECT = re.compile(r"#\s*expect exit (\d+)\s*$")
PLACEHOLDERS = {
    "REV": ("resulting_revision", ("current", "revision"), ("view", "revision"), "revision"),
    "TOKEN": ("token",),
    "REVIEW_ID": ("review_id",),
    "RECALL_ID": ("recall_id",),
}

pytestmark = pytest.mark.slow


@dataclass
class Command:
    block_line: int  # page line of the ```sh fence
    line: int  # page line where the command starts
    text: str
    expect: int
    page: str = "README.md"


def pages() -> list[Path]:
    """README.md, then the manual's pages in the order its index lists them."""
    listed = re.findall(r"^\| \[[^\]]+\]\(([a-z0-9-]+\.md)\)", MANUAL.read_text(), re.M)
    return [README, *(MANUAL.parent / name for name in listed)]


def sh_blocks(text: str) -> list[tuple[int, list[tuple[int, str]]]]:
    blocks, current, start = [], None, 0
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if current is None and stripped.startswith("```"):
            if stripped == "```sh":
                current, start = [], number
            else:
                current, start = False, number  # another fence: skip to its end
        elif current is not None and stripped == "```":
            if current is not False:
                blocks.append((start, current))
            current = None
        elif current not in (None, False):
            current.append((number, line))
    return blocks


def commands(text: str, page: str = "README.md") -> list[Command]:
    out = []
    for start, lines in sh_blocks(text):
        pending: list[str] = []
        first = 0
        for number, line in lines:
            if not pending:
                first = number
                if not line.strip() or line.strip().startswith("#"):
                    continue
            pending.append(line)
            if line.rstrip().endswith("\\"):
                continue
            joined = "\n".join(pending)
            pending = []
            if SKIPPED.match(joined):
                continue
            match = EXPECT.search(joined)
            out.append(Command(start, first, joined, int(match.group(1)) if match else 0, page))
    return out


def _name(page: Path) -> str:
    return str(page.relative_to(ROOT))


def all_commands() -> list[Command]:
    return [cmd for page in pages() for cmd in commands(page.read_text(), _name(page))]


def test_every_manual_page_is_in_the_index_and_the_front_page_stays_short():
    listed = {p.name for p in pages()[1:]}
    on_disk = {p.name for p in MANUAL.parent.glob("*.md")} - {"README.md"}
    assert on_disk == listed, f"pages missing from docs/README.md: {sorted(on_disk - listed)}"
    assert len(README.read_bytes()) <= FRONT_PAGE_MAX_BYTES


def test_sh_blocks_hold_no_sketches():
    bad = [
        f"{_name(page)}:{number}: {line.strip()}"
        for page in pages()
        for _, lines in sh_blocks(page.read_text())
        for number, line in lines
        if "…" in line
    ]
    assert not bad, "a literal … in an ```sh block (use a ```text block for sketches):\n" + (
        "\n".join(bad)
    )


def _extract_script() -> str:
    """Python run after each command: prints `export NAME=value` lines for placeholders."""
    return (
        "import json,shlex,sys\n"
        f"P={json.dumps(PLACEHOLDERS)}\n"
        "try:\n d=json.loads(open(sys.argv[1]).read())\nexcept Exception:\n sys.exit(0)\n"
        "if not isinstance(d,dict): sys.exit(0)\n"
        "for name,paths in P.items():\n"
        " if name=='REV' and d.get('status')=='preview': continue\n"
        " found=None\n"
        " for p in paths:\n"
        "  v=d\n"
        "  for k in ([p] if isinstance(p,str) else p):\n"
        "   v=v.get(k) if isinstance(v,dict) else None\n"
        "  if v is not None:\n"
        "   found=v\n"
        "   break\n"
        " views=[d.get(k) for k in ('current','view')]\n"
        " if found is None and name=='REV' and any(isinstance(v,dict) for v in views):\n"
        "  found='none'\n"
        " if found is not None:\n"
        "  print('export '+name+'='+shlex.quote(str(found)))\n"
    )


def _script(cmds: list[Command], work: Path, base_url: str) -> str:
    extract = work / "extract.py"
    extract.write_text(_extract_script())
    lines = ["cd " + shlex.quote(str(ROOT))]
    for i, cmd in enumerate(cmds):
        body = cmd.text.replace(BASE_URL, base_url)
        lines += [
            f"echo {i} > {work}/current",
            "{\n" + body + "\n} " + f"> {work}/{i}.out 2> {work}/{i}.err < /dev/null",
            f"echo $? > {work}/{i}.rc",
            f'[ "$(cat {work}/{i}.rc)" = "{cmd.expect}" ] || exit 3',
            f'eval "$({shlex.quote(sys.executable)} {extract} {work}/{i}.out)"',
        ]
    return "\n".join(lines) + "\n"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def demo_env(tmp_path):
    """A fresh database as `make run` leaves it, and a server on a free port."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "DJANGO_SETTINGS"))}
    env.update(
        DATABASE_URL=f"sqlite:///{tmp_path / 'readme.sqlite3'}",
        DEBUG="true",
        LOG_LEVEL="WARNING",
        PYTHONUNBUFFERED="1",
    )
    manage = [sys.executable, "manage.py"]
    for argv in (["migrate", "--noinput", "-v0"], ["loopx_demo", "--operator", "operator"]):
        proc = subprocess.run(
            [*manage, *argv], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
    port = _free_port()
    server = subprocess.Popen(
        [*manage, "runserver", "--noreload", f"127.0.0.1:{port}"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(base + "/api/schema/", timeout=2).read()
            break
        except OSError:
            time.sleep(0.2)
    try:
        yield env, base
    finally:
        server.terminate()
        server.wait(timeout=10)


def _report(cmd: Command, i: int, work: Path) -> str:
    def read(suffix: str) -> str:
        path = work / f"{i}.{suffix}"
        return path.read_text(errors="replace").strip() if path.exists() else ""

    return (
        f"README example failed (block at {cmd.page}:{cmd.block_line}, "
        f"command at {cmd.page}:{cmd.line}):\n"
        f"  $ {cmd.text}\n"
        f"exit status {read('rc') or '?'} (expected {cmd.expect})\n"
        f"--- stdout ---\n{read('out')[-4000:]}\n--- stderr ---\n{read('err')[-4000:]}"
    )


def test_readme_examples_run_as_written(demo_env, tmp_path):
    env, base = demo_env
    cmds = all_commands()
    assert cmds, "README.md and docs/ have no ```sh examples"
    work = tmp_path / "run"
    work.mkdir()
    script = work / "readme.sh"
    script.write_text(_script(cmds, work, base))
    proc = subprocess.run(
        ["bash", str(script)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=1200
    )
    if proc.returncode != 0:
        current = work / "current"
        i = int(current.read_text()) if current.exists() else 0
        pytest.fail(_report(cmds[i], i, work) + f"\n(harness stderr: {proc.stderr[-2000:]})")
    ran = len(list(work.glob("*.rc")))
    assert ran == len(cmds)


def test_the_harness_reports_block_line_and_output(tmp_path):
    sample = (
        "# T\n\n```text\nnot run …\n```\n\n```sh\nM=echo\n$M one \\\n  two\n"
        "make run\nfalse  # expect exit 1\n```\n"
    )
    found = commands(sample)
    assert [(c.block_line, c.line, c.expect) for c in found] == [(7, 8, 0), (7, 9, 0), (7, 12, 1)]
    assert found[1].text == "$M one \\\n  two"
    (tmp_path / "0.rc").write_text("2")
    (tmp_path / "0.out").write_text('{"code": "revision_conflict"}')
    message = _report(found[1], 0, tmp_path)
    assert "README.md:7" in message
    assert "README.md:9" in message
    assert "revision_conflict" in message
    assert "exit status 2 (expected 0)" in message


def test_placeholders_follow_the_documents(tmp_path):
    extract = tmp_path / "extract.py"
    extract.write_text(_extract_script())

    def exports(document: dict) -> str:
        out = tmp_path / "out.json"
        out.write_text(json.dumps(document))
        proc = subprocess.run(
            [sys.executable, str(extract), str(out)], capture_output=True, text=True, check=True
        )
        return proc.stdout

    assert exports({"status": "applied", "current": {"revision": "3"}}) == "export REV=3\n"
    assert exports({"status": "read", "current": {"revision": None}}) == "export REV=none\n"
    assert exports({"status": "preview", "current": {"revision": "4"}}) == ""
    assert exports({"review_id": "rmrv_1"}) == "export REVIEW_ID=rmrv_1\n"
