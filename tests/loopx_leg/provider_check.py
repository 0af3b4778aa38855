"""LoopX uses this service as its provider (issue 23), checked with real LoopX.

    python -m tests.loopx_leg.provider_check

Real LoopX installs the TOML extensions ``make setup`` writes
(``.local/extensions/loopx-memory-{local,remote}.toml``: the shipped manifests naming the
virtualenv's console script ``.venv/bin/loopx-memory-provider`` by its absolute path) with
no PATH step, then runs ``semantic-preference doctor``
and ``recall --execute`` through each: the local one against this checkout's database,
the remote one against a running server (gunicorn on a loopback port) with a host token
that only the environment carries. Each must be ``ready`` / ``completed`` with the items
our own provider ranks for the demo project. Prints one line per check and exits 1 on
any failure. Needs ``LOOPX_LEG_BIN``, ``LOOPX_LEG_NODE_DIR`` and ``LOOPX_LEG_SCRATCH``
(``scripts/test-loopx.sh`` sets them).
"""

import json
import os
import socket
import subprocess
import sys
import time
import tomllib
from pathlib import Path

from tests.loopx_leg.runner import ROOT, LoopXSide, OursSide, _run, stop_daemons

PROJECT = "loopx-demo"  # the demo's provider notes (preferences/demo_recall.py)
CONFIG = "demo"  # the demo's registered config, owned by Goal `demo`
SURFACE = "issue_fix.pr_description"
MANIFESTS = ROOT / ".local" / "extensions"  # written by `make setup`


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _json(result) -> dict:
    try:
        return json.loads(result.stdout)
    except ValueError:
        return {}


def _doctor_alone(check, mode: str, manifest: Path, env: dict) -> None:
    """The manifest's doctor argv (entrypoint + args + doctor_args, as LoopX composes it),
    run alone on this machine as it is (loaded): exit 0 within the manifest's
    ``timeout_seconds``, the bound LoopX's doctor enforces; its time is printed."""
    runtime = tomllib.loads(manifest.read_text())["runtime"]
    argv = [runtime["entrypoint"], *runtime.get("args", []), *runtime["doctor_args"]]
    limit = int(runtime["timeout_seconds"])
    started = time.monotonic()
    try:
        done = subprocess.run(
            argv, env=env, capture_output=True, text=True, timeout=limit, check=False
        )
        code = done.returncode
    except subprocess.TimeoutExpired:
        code = None
    took = time.monotonic() - started
    check.expect(
        f"{mode}: provider doctor alone answers ready within LoopX's timeout",
        code == 0,
        f"exit {code} in {took:.2f}s of {limit}s ({took / limit:.1%})",
    )


class Check:
    def __init__(self):
        self.failures: list[str] = []

    def expect(self, name: str, ok: bool, detail: str = "") -> None:
        print(f"  [{'ok' if ok else 'FAIL'}] {name}" + (f": {detail}" if detail else ""))
        if not ok:
            self.failures.append(name)


def _ours_ranking(ours: OursSide, db: Path, query: str) -> list[str]:
    """The refs our own provider ranks for the demo project (the expected items)."""
    request = json.dumps(
        {
            "schema_version": "semantic_preference_provider_request_v0",
            "surface": SURFACE,
            "query": query,
            "limit": 3,
            "context": {},
        }
    )
    cmd = [ours.python, "manage.py", "local_preference_provider", "recall", "--project", PROJECT]
    result = _run("ours", cmd, ours._env(db), str(ROOT), request)
    return [item["preference_ref"] for item in _json(result).get("items", [])]


def main() -> int:
    scratch = Path(os.environ["LOOPX_LEG_SCRATCH"]) / "provider-check"
    scratch.mkdir(parents=True, exist_ok=True)
    loopx = LoopXSide(os.environ["LOOPX_LEG_BIN"], os.environ["LOOPX_LEG_NODE_DIR"], scratch)
    ours = OursSide(scratch)
    ours.build_template()
    db = ours.template
    env = ours._env(db)
    token = _json(
        _run(
            "ours",
            [ours.python, "manage.py", "token", "create", "--goal-id", "demo", "--execute"],
            env,
            str(ROOT),
            None,
        )
    ).get("token")
    check = Check()
    check.expect("host token issued for Goal demo", bool(token))
    state = loopx.prepare(scratch / "group")
    workspace = scratch / "ws"
    workspace.mkdir(exist_ok=True)
    (workspace / "project").mkdir(exist_ok=True)
    query = "PR description structure and reviewer language preferences"
    expected = _ours_ranking(ours, db, query)
    check.expect("our provider ranks demo items", bool(expected), ", ".join(expected))

    port = _free_port()
    server = subprocess.Popen(
        [ours.python, "-m", "gunicorn", "loopx_site.wsgi:application", "--bind",
         f"127.0.0.1:{port}", "--workers", "1", "--timeout", "60"],
        cwd=ROOT, env={**env, "LOG_LEVEL": "WARNING"},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        for _ in range(300):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if server.poll() is not None:
                    break
                time.sleep(0.1)
        check.expect("server listening", server.poll() is None, f"127.0.0.1:{port}")
        # No PATH step: the generated manifest names the entrypoint. The token, URL and
        # config only in the environment (the manifest and the config name the variables).
        loopx.env.update(
            {
                "LOOPX_MEMORY_PROJECT": PROJECT,
                "LOOPX_MEMORY_URL": f"http://127.0.0.1:{port}",
                "LOOPX_MEMORY_TOKEN": token or "",
                "LOOPX_MEMORY_CONFIG": CONFIG,
                **{k: v for k, v in env.items() if k in ("DATABASE_URL", "DJANGO_SETTINGS_MODULE")},
                "DEBUG": "false",
                "SECURE_SSL": "false",
            }
        )
        for mode in ("local", "remote"):
            manifest = MANIFESTS / f"loopx-memory-{mode}.toml"
            text = manifest.read_text()
            check.expect(
                f"{mode}: manifest holds no secret", token not in text and "lxh_" not in text
            )
            install = loopx.run(
                state, ["extension", "install", "--manifest", str(manifest), "--execute"]
            )
            check.expect(
                f"{mode}: loopx extension install",
                install.code == 0,
                _json(install).get("status", install.stderr[-200:]),
            )
            config = workspace / f"{mode}.json"
            config.write_text(
                json.dumps(
                    {
                        "schema_version": "semantic_preference_hook_config_v0",
                        "enabled": True,
                        "provider": {"id": "loopx_memory", "extension_id": f"loopx-memory-{mode}"},
                        "surfaces": {SURFACE: {"query": query, "limit": 3}},
                    }
                )
            )
            common = ["--project", str(workspace / "project"), "--config", str(config)]
            _doctor_alone(check, mode, manifest, loopx.env)
            started = time.monotonic()
            doctor = loopx.run(state, ["semantic-preference", "doctor", *common, "--execute"])
            took = time.monotonic() - started
            doc = _json(doctor)
            check.expect(
                f"{mode}: loopx doctor ready",
                doc.get("status") == "ready",
                f"{doc.get('status')} in {took:.1f}s (LoopX's whole command) "
                + doctor.stderr[-200:],
            )
            recall = loopx.run(
                state, ["semantic-preference", "recall", *common, "--surface", SURFACE, "--execute"]
            )
            doc = _json(recall)
            refs = [item.get("preference_ref") for item in doc.get("items", [])]
            check.expect(
                f"{mode}: loopx recall completed with our items",
                doc.get("status") == "completed" and refs == expected,
                f"status={doc.get('status')} items={refs}",
            )
            if mode == "remote":
                # The server is the one answering: a token it does not know is refused.
                loopx.env["LOOPX_MEMORY_TOKEN"] = "lxh_not-a-token"
                bad = _json(
                    loopx.run(state, ["semantic-preference", "doctor", *common, "--execute"])
                )
                check.expect("remote: unknown token is not ready", bad.get("status") != "ready",
                             str(bad.get("status")))  # fmt: skip
                loopx.env["LOOPX_MEMORY_TOKEN"] = token or ""
            leaked = token and (
                token in recall.stdout + recall.stderr + doctor.stdout + doctor.stderr
            )
            check.expect(f"{mode}: no token in LoopX output", not leaked)
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
        stop_daemons(Path(loopx.env["TMPDIR"]))
    verdict = "FAILED: " + ", ".join(check.failures) if check.failures else "passed"
    print(f"== provider check: {verdict}")
    return 1 if check.failures else 0


if __name__ == "__main__":
    sys.exit(main())
