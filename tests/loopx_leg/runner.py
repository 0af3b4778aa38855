"""The two sides of the leg: real LoopX (`loopx … --format json`) and our `manage.py`.

Each scripted group gets its own LoopX workspace (project, registry, runtime root) and its
own copy of a migrated SQLite database, so groups never see each other's state. LoopX
runs with HOME and TMPDIR in the leg's scratch folder; the effect-runtime daemons it
leaves behind are found through their info files and stopped by PID (`stop_daemons`).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROVIDERS = Path(__file__).resolve().parent / "providers"
GOAL_ID = "leg"
AGENTS = ("author", "reviewer")
# Bounds on one call, generous for a loaded shared machine (a call past its bound is
# reported as exit -9, a difference); the template build (migrate, demo) gets the longest.
CALL_TIMEOUT = int(os.environ.get("LOOPX_LEG_CALL_TIMEOUT", "300"))
TEMPLATE_TIMEOUT = int(os.environ.get("LOOPX_LEG_TEMPLATE_TIMEOUT", "900"))


@dataclass
class Result:
    side: str
    argv: list[str]
    code: int
    stdout: str
    stderr: str
    seconds: float

    @property
    def doc(self):
        """The one JSON object printed on stdout, or None."""
        text = self.stdout.strip()
        if not text:
            return None
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            # LoopX may print a notice before the document: take the last object.
            start = text.rfind("\n{")
            try:
                value = json.loads(text[start + 1 :]) if start >= 0 else None
            except json.JSONDecodeError:
                return None
        return value if isinstance(value, dict) else None


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


class Workspace:
    """Files a group's steps refer to (`{ws}` in an argument), shared by both sides."""

    def __init__(self, root: Path):
        self.root = root
        root.mkdir(parents=True, exist_ok=True)

    def file(self, name: str, content) -> str:
        text = content if isinstance(content, str) else json.dumps(content)
        path = _write(self.root / name, text)
        if name.endswith(".sh"):
            path.chmod(0o755)
        return str(path)


class LoopXSide:
    name = "loopx"

    def __init__(self, binary: str, node_dir: str, scratch: Path):
        self.binary = binary
        self.scratch = scratch
        self.env = {
            "HOME": str(scratch / "home"),
            "TMPDIR": str(scratch / "tmp"),
            "PATH": os.pathsep.join([node_dir, str(Path(binary).parent), "/usr/bin", "/bin"]),
            "LANG": "C.UTF-8",
            # No usage heartbeat from the leg (the network has only package registries).
            "LOOPX_USAGE_PING": "0",
        }
        for d in ("home", "tmp"):
            (scratch / d).mkdir(parents=True, exist_ok=True)

    def prepare(self, group_dir: Path) -> dict:
        """A registered Goal `leg` (Agents author, reviewer) with project and state file."""
        project = group_dir / "loopx-project"
        runtime = group_dir / "loopx-runtime"
        state_file = f".codex/goals/{GOAL_ID}/ACTIVE_GOAL_STATE.md"
        _write(
            project / state_file,
            "---\nstatus: active-read-only\nowner_mode: goal\n"
            'objective: "LoopX leg fixture."\nupdated_at: 2026-01-01T00:00:00+00:00\n---\n\n'
            "# LoopX leg\n\n## Objective\n\nLoopX leg fixture.\n\n## Next Action\n\n"
            "- Validate the fixture.\n\n## Agent Todo\n\n- [ ] [P1] Validate the fixture.\n"
            "  <!-- loopx:todo todo_id=todo_leg status=open task_class=advancement_task "
            "action_kind=validate -->\n",
        )
        registry = {
            "schema_version": "0.1",
            "updated_at": "2026-01-01T00:00:00+00:00",
            "common_runtime_root": str(runtime),
            "goals": [
                {
                    "id": GOAL_ID,
                    "domain": "loopx-leg",
                    "status": "active-read-only",
                    "repo": str(project),
                    "state_file": state_file,
                    "adapter": {
                        "kind": "read_only_project_map_v0",
                        "status": "connected-read-only",
                    },
                    "coordination": {"registered_agents": list(AGENTS), "agent_model": "peer_v1"},
                    "authority_sources": [],
                    "quota": {"compute": 1.0, "window_hours": 24, "allowed_slots": 2},
                }
            ],
        }
        reg = _write(project / ".loopx" / "registry.json", json.dumps(registry, indent=2))
        runtime.mkdir(parents=True, exist_ok=True)
        return {"registry": str(reg), "runtime": str(runtime), "cwd": str(group_dir)}

    def run(self, state: dict, argv: list[str], stdin: str | None = None) -> Result:
        if argv and argv[0] == "@python":  # a script under LoopX's own interpreter
            cmd = [str(Path(self.binary).parent / "python"), *argv[1:]]
            return _run(self.name, cmd, self.env, state["cwd"], stdin)
        cmd = [
            self.binary,
            "--registry",
            state["registry"],
            "--runtime-root",
            state["runtime"],
            "--format",
            "json",
            *argv,
        ]
        return _run(self.name, cmd, self.env, state["cwd"], stdin)


class OursSide:
    name = "ours"

    def __init__(self, scratch: Path):
        self.scratch = scratch
        self.python = str(ROOT / ".venv" / "bin" / "python")
        self.template = scratch / "ours-template.sqlite3"
        base = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "LOOPX_LEG"))}
        base.update(
            {
                "DJANGO_SETTINGS_MODULE": "loopx_site.settings",
                "PYTHONPATH": str(ROOT),
                "DEBUG": "false",
                "SECURE_SSL": "false",
                "LANG": "C.UTF-8",
            }
        )
        self.base_env = base

    def _env(self, db: Path) -> dict:
        return {**self.base_env, "DATABASE_URL": f"sqlite:///{db}"}

    def build_template(self) -> None:
        """Migrate once, load the demo, register Goal `leg` (Agents author, reviewer)."""
        env = self._env(self.template)
        steps = [
            ["migrate", "--noinput", "-v0"],
            ["loopx_demo", "--format", "json"],
            ["goal", "register", "--goal-id", GOAL_ID]
            + [a for agent in AGENTS for a in ("--agent-id", agent)]
            + ["--execute", "--format", "json"],
        ]
        for argv in steps:
            r = _run(
                self.name,
                [self.python, "manage.py", *argv],
                env,
                str(ROOT),
                None,
                timeout=TEMPLATE_TIMEOUT,
            )
            if r.code != 0:
                raise RuntimeError(f"template step {argv[0]} failed: {r.stderr[-500:]}")

    def prepare(self, group_dir: Path) -> dict:
        db = group_dir / "ours.sqlite3"
        src = sqlite3.connect(self.template)
        dst = sqlite3.connect(db)
        with dst:
            src.backup(dst)
        src.close()
        dst.close()
        return {"db": str(db), "cwd": str(ROOT)}

    def run(self, state: dict, argv: list[str], stdin: str | None = None) -> Result:
        if argv and argv[0] == "@api":  # an API request (tests/loopx_leg/api_call.py)
            cmd = [self.python, "-m", "tests.loopx_leg.api_call", *argv[1:]]
            return _run(self.name, cmd, self._env(Path(state["db"])), state["cwd"], stdin)
        cmd = [self.python, "manage.py", *argv, "--format", "json"]
        return _run(self.name, cmd, self._env(Path(state["db"])), state["cwd"], stdin)


def _run(
    side: str,
    cmd: list[str],
    env: dict,
    cwd: str,
    stdin: str | None,
    timeout: int = CALL_TIMEOUT,
) -> Result:
    started = time.monotonic()
    try:
        proc = subprocess.run(
            cmd,
            input=stdin,
            capture_output=True,
            text=True,
            env=env,
            cwd=cwd,
            timeout=timeout,
            check=False,
        )
        code, out, err = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as exc:
        code, out, err = -9, exc.stdout or "", f"timed out after {timeout}s"
        out = out if isinstance(out, str) else out.decode("utf-8", "replace")
    return Result(side, cmd, code, out, err, time.monotonic() - started)


def daemon_pids(tmpdir: Path) -> list[int]:
    """PIDs of live LoopX effect-runtime daemons whose info files are under ``tmpdir``."""
    pids = []
    for info in sorted(tmpdir.glob("loopx-effect-runtime-*/runtime-*.json")):
        try:
            pid = int(json.loads(info.read_text()).get("pid"))
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except (OSError, ValueError, TypeError, json.JSONDecodeError):
            continue
        if b"effect_runtime_server.ts" in cmdline:
            pids.append(pid)
    return pids


def stop_daemons(tmpdir: Path) -> list[int]:
    """Stop (TERM, then KILL) every daemon LoopX started under ``tmpdir``; return PIDs."""
    pids = daemon_pids(tmpdir)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            continue
    deadline = time.monotonic() + 3
    for pid in pids:
        while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        if Path(f"/proc/{pid}").exists():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    return pids


def clean_dir(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True, exist_ok=True)


def python_for_providers() -> str:
    """The interpreter that runs the leg's scripted provider (both sides run the same one)."""
    return sys.executable
