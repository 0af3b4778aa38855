"""Start a real OpenViking server on loopback for the test leg and the demo.

``python -m tests.openviking.harness run -- CMD…`` starts, in a temp workspace:

1. the OpenAI-compatible model stub (``model_stub``) on a free loopback port;
2. ``openviking-server`` (from ``OPENVIKING_SERVER_BIN``, default
   ``.venv-openviking/bin/openviking-server``) on another free loopback port, with local
   ``agfs``/``vectordb`` backends and its embedding and VLM providers pointed at the stub;
3. an account and a ``user``-role key through the Admin API (``auth_mode: api_key`` with a
   random root key — in ``dev`` mode every request is ROOT, and ROOT bypasses the
   actor-peer view, so peer isolation could not be observed);

then runs ``CMD`` with ``OPENVIKING_BASE_URL``, ``OPENVIKING_API_KEY``,
``OPENVIKING_USER_ID`` and ``LOOPX_OPENVIKING_LEG=1`` set, tears everything down and exits
with ``CMD``'s status. If the server cannot start, it prints ``SKIPPED: <reason>`` and
exits 0 (the reason is the server's own last log lines, from the temp workspace), or runs
``--fallback`` instead when given.
"""

import argparse
import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from tests.openviking import model_stub

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_SERVER_BIN = ROOT / ".venv-openviking" / "bin" / "openviking-server"
START_TIMEOUT_SECONDS = 120
ACCOUNT_ID = "loopx-test"
USER_ID = "loopx-user"


class StackUnavailable(Exception):
    """The server could not be started; the message is the SKIPPED reason."""


@dataclass
class Stack:
    base_url: str
    api_key: str
    user_id: str
    root_key: str
    workdir: Path
    process: subprocess.Popen
    stub: object

    def env(self) -> dict[str, str]:
        return {
            "OPENVIKING_BASE_URL": self.base_url,
            "OPENVIKING_API_KEY": self.api_key,
            "OPENVIKING_USER_ID": self.user_id,
            "LOOPX_OPENVIKING_LEG": "1",
        }

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        self.stub.shutdown()
        self.stub.server_close()
        shutil.rmtree(self.workdir, ignore_errors=True)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _post(url: str, body: dict, headers: dict[str, str]) -> dict:
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", **headers},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def _tail(path: Path, lines: int = 12) -> str:
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return "(no server log)"
    return " | ".join(line.strip() for line in text[-lines:] if line.strip())[-1500:]


def start_stack(server_bin: Path | None = None) -> Stack:
    server_bin = Path(server_bin or os.environ.get("OPENVIKING_SERVER_BIN") or DEFAULT_SERVER_BIN)
    server_bin = Path(os.path.abspath(server_bin))
    if not server_bin.exists():
        raise StackUnavailable("openviking-server is not installed (run make test-openviking)")
    workdir = Path(tempfile.mkdtemp(prefix="loopx-openviking-"))
    stub = model_stub.start()
    stub_base = f"http://127.0.0.1:{stub.server_address[1]}/v1"
    port = free_port()
    root_key = secrets.token_hex(24)
    config = {
        "storage": {
            "workspace": str(workdir / "workspace"),
            "agfs": {"backend": "local"},
            "vectordb": {"backend": "local"},
        },
        "embedding": {
            "dense": {
                "provider": "openai",
                "model": model_stub.MODEL_EMBEDDING,
                "api_base": stub_base,
                "api_key": "stub-key",
                "dimension": model_stub.DIMENSION,
                "input": "text",
                "encoding_format": "float",
            }
        },
        "vlm": {
            "provider": "openai",
            "model": model_stub.MODEL_CHAT,
            "api_base": stub_base,
            "api_key": "stub-key",
        },
        "server": {
            "host": "127.0.0.1",
            "port": port,
            "auth_mode": "api_key",
            "root_api_key": root_key,
        },
    }
    conf = workdir / "ov.conf"
    conf.write_text(json.dumps(config))
    conf.chmod(0o600)
    log = workdir / "server.log"
    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "LANG": "C.UTF-8",
        "HOME": str(workdir),
        "OPENVIKING_CONFIG_FILE": str(conf),
        "NO_PROXY": "127.0.0.1,localhost",
    }
    try:
        with log.open("wb") as out:
            process = subprocess.Popen(
                [str(server_bin), "--config", str(conf)],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=workdir,
                env=env,
                start_new_session=True,
            )
    except OSError as exc:
        stub.shutdown()
        stub.server_close()
        shutil.rmtree(workdir, ignore_errors=True)
        reason = f"openviking-server could not be executed ({exc.strerror})"
        raise StackUnavailable(reason) from None
    base_url = f"http://127.0.0.1:{port}"
    stack = Stack(base_url, "", USER_ID, root_key, workdir, process, stub)
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    try:
        while True:
            if process.poll() is not None:
                raise StackUnavailable(
                    f"openviking-server exited with status {process.returncode}: {_tail(log)}"
                )
            try:
                with urllib.request.urlopen(base_url + "/health", timeout=2) as response:
                    if json.loads(response.read()).get("healthy"):
                        break
            except (OSError, ValueError):
                pass
            if time.monotonic() > deadline:
                raise StackUnavailable(
                    f"openviking-server did not answer /health in {START_TIMEOUT_SECONDS}s: "
                    f"{_tail(log)}"
                )
            time.sleep(0.5)
        root = {"X-API-Key": root_key}
        _post(
            base_url + "/api/v1/admin/accounts",
            {"account_id": ACCOUNT_ID, "admin_user_id": "loopx-admin"},
            root,
        )
        created = _post(
            f"{base_url}/api/v1/admin/accounts/{ACCOUNT_ID}/users",
            {"user_id": USER_ID, "role": "user"},
            root,
        )
        stack.api_key = created["result"]["user_key"]
    except StackUnavailable:
        stack.stop()
        raise
    except (OSError, ValueError, KeyError, TypeError, urllib.error.URLError) as exc:
        reason = f"could not create an OpenViking user ({type(exc).__name__}): {_tail(log)}"
        stack.stop()
        raise StackUnavailable(reason) from None
    return stack


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    split = argv.index("--") if "--" in argv else len(argv)
    parser = argparse.ArgumentParser(description="Run a command next to a real OpenViking server.")
    parser.add_argument("mode", choices=["run"])
    parser.add_argument(
        "--fallback", help="shell command to run instead when the server cannot start"
    )
    args = parser.parse_args(argv[:split])
    command = argv[split + 1 :]
    if not command:
        parser.error("a command is required after --")
    started = time.monotonic()
    try:
        stack = start_stack()
    except StackUnavailable as exc:
        print(f"SKIPPED: {exc}", flush=True)
        if args.fallback:
            return subprocess.call(["bash", "-c", args.fallback])
        return 0
    print(
        f"openviking-server ready at {stack.base_url} ({time.monotonic() - started:.1f}s to start)",
        file=sys.stderr,
        flush=True,
    )
    try:
        return subprocess.call(command, env={**os.environ, **stack.env()})
    except KeyboardInterrupt:
        return 130
    finally:
        stack.stop()


if __name__ == "__main__":
    sys.exit(main())
