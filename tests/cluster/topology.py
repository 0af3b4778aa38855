"""The processes of the cluster leg, on loopback ports, each stopped by its PID.

PostgreSQL (throwaway cluster, as the ``postgres`` user when run as root) ← PgBouncer
(transaction pooling, as ``postgres`` too: it refuses to run as root) ← two gunicorn
instances (``--workers 1`` each) ← HAProxy (round robin, health checks); Redis is the
shared cache (throttle counters) and the Celery broker; two Celery workers (worker1 on
the prefork pool with one pool process, worker2 solo: one process to SIGKILL) and one
beat when the project has a Celery app (``loopx_site/celery.py``).

Every PID started is written to ``<scratch>/pids/<name>.pid`` as soon as it is known,
so ``scripts/test-cluster.sh`` can stop what is left even if this process is killed.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PYTHON = str(ROOT / ".venv" / "bin" / "python") if (ROOT / ".venv").exists() else sys.executable
SECRET = "cluster-leg-" + "k" * 52


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, seconds: float, proc: subprocess.Popen | None = None) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            return False
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return True
        except OSError:
            time.sleep(0.1)
    return False


def pg_bindir() -> str | None:
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return str(Path(found).resolve().parent)
    candidates = sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True)
    for d in candidates:
        if (d / "initdb").exists():
            return str(d)
    return None


def missing_binaries() -> list[str]:
    """What the leg needs and this machine lacks (the script installs them as root)."""
    missing = [b for b in ("redis-server", "pgbouncer", "haproxy") if not find_binary(b)]
    if pg_bindir() is None:
        missing.append("postgresql (initdb/pg_ctl)")
    return missing


def find_binary(name: str) -> str | None:
    return shutil.which(name) or next(
        (str(p) for p in (Path("/usr/sbin") / name, Path("/usr/bin") / name) if p.exists()), None
    )


@dataclass
class Proc:
    name: str
    popen: subprocess.Popen
    log: Path
    port: int | None = None

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


@dataclass
class Topology:
    scratch: Path
    as_root: bool = field(default_factory=lambda: os.geteuid() == 0)
    procs: dict[str, Proc] = field(default_factory=dict)
    ports: dict[str, int] = field(default_factory=dict)
    pg_data: Path | None = None
    pg_bin: str | None = None
    celery: bool = False
    killed: set[str] = field(default_factory=set)

    # -- bookkeeping -------------------------------------------------------------------
    def _pidfile(self, name: str) -> Path:
        d = self.scratch / "pids"
        d.mkdir(parents=True, exist_ok=True)
        return d / f"{name}.pid"

    def _as_pg(self) -> list[str]:
        return ["runuser", "-u", "postgres", "--"] if self.as_root else []

    def spawn(self, name: str, argv: list[str], *, env=None, port=None, cwd=None) -> Proc:
        log = self.scratch / "logs" / f"{name}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        handle = log.open("ab")
        popen = subprocess.Popen(
            argv,
            stdout=handle,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            cwd=cwd or ROOT,
            start_new_session=True,  # a signal to the harness is not a signal to them
        )
        handle.close()
        self._pidfile(name).write_text(f"{popen.pid}\n")
        proc = Proc(name, popen, log, port)
        self.procs[name] = proc
        return proc

    def kill(self, name: str, sig: int = signal.SIGKILL) -> list[int]:
        """Signal one process by its PID (and its own children, e.g. gunicorn's worker)."""
        proc = self.procs[name]
        self.killed.add(name)
        children = _children(proc.pid)
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, sig)
        for child in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.popen.wait(10)
        return [proc.pid, *children]

    def stop_all(self) -> None:
        """Stop every process this topology started, by PID, newest first."""
        for name in reversed(list(self.procs)):
            proc = self.procs[name]
            if proc.alive():
                children = _children(proc.pid)
                try:
                    os.kill(proc.pid, signal.SIGTERM)
                    proc.popen.wait(5)
                except ProcessLookupError:
                    pass
                except subprocess.TimeoutExpired:
                    for pid in [proc.pid, *children]:
                        with contextlib.suppress(ProcessLookupError):
                            os.kill(pid, signal.SIGKILL)
                    proc.popen.wait(5)
                for child in children:  # e.g. a gunicorn worker orphaned by its master
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(child, signal.SIGKILL)
            self._pidfile(name).unlink(missing_ok=True)
        if self.pg_data is not None and self.pg_bin:
            pg_ctl = [*self._as_pg(), f"{self.pg_bin}/pg_ctl", "-D", str(self.pg_data)]
            stop = _run([*pg_ctl, *["-m", "immediate", "-w", "-t", "30", "stop"]])
            if stop.returncode == 0:
                self._pidfile("postgres").unlink(missing_ok=True)
            else:  # the script's trap stops it by the recorded PID
                print(f"   pg_ctl stop failed: {stop.stderr.strip()[-200:]}", flush=True)
            self.pg_data = None

    # -- the services ------------------------------------------------------------------
    def start_postgres(self) -> None:
        self.pg_bin = pg_bindir()
        base = self.scratch / "pg"
        base.mkdir(parents=True, exist_ok=True)
        if self.as_root:
            shutil.chown(self.scratch, "postgres")
            shutil.chown(base, "postgres")
        data = base / "data"
        initdb = [*self._as_pg(), f"{self.pg_bin}/initdb", "-D", str(data)]
        run = _run([*initdb, *["-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync"]])
        if run.returncode:
            raise RuntimeError(f"initdb failed: {run.stderr[-400:]}")
        port = self.ports["postgres"] = free_port()
        opts = (
            f"-p {port} -k {base} -c listen_addresses=127.0.0.1 -c max_connections=100 "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c timezone=UTC"
        )
        pg_ctl = [*self._as_pg(), f"{self.pg_bin}/pg_ctl", "-D", str(data)]
        run = _run(
            [*pg_ctl, "-l", str(base / "server.log"), *["-w", "-t", "60", "start", "-o"], opts]
        )
        if run.returncode:
            raise RuntimeError(f"PostgreSQL did not start: {run.stderr[-400:]}")
        self.pg_data = data
        pid = int((data / "postmaster.pid").read_text().split()[0])
        self._pidfile("postgres").write_text(f"{pid}\n")
        self.psql("CREATE DATABASE loopx")

    def psql(self, sql: str, db: str = "postgres") -> str:
        where = ["-h", "127.0.0.1", "-p", str(self.ports["postgres"]), "-U", "postgres"]
        run = _run([f"{self.pg_bin}/psql", "-X", "-At", *where, "-d", db, "-c", sql])
        if run.returncode:
            raise RuntimeError(f"psql failed: {run.stderr.strip()[-300:]}")
        return run.stdout.strip()

    def start_pgbouncer(self) -> None:
        base = self.scratch / "pgbouncer"
        base.mkdir(exist_ok=True)
        port = self.ports["pgbouncer"] = free_port()
        (base / "userlist.txt").write_text('"postgres" ""\n')
        (base / "pgbouncer.ini").write_text(
            "[databases]\n"
            f"loopx = host=127.0.0.1 port={self.ports['postgres']} dbname=loopx\n"
            "[pgbouncer]\n"
            f"listen_addr = 127.0.0.1\nlisten_port = {port}\nunix_socket_dir =\n"
            "auth_type = trust\n"
            f"auth_file = {base / 'userlist.txt'}\n"
            "pool_mode = transaction\n"
            "max_client_conn = 200\ndefault_pool_size = 20\n"
            "ignore_startup_parameters = extra_float_digits,options\n"
            "server_reset_query =\n"
        )
        if self.as_root:
            shutil.chown(base, "postgres")
            for f in base.iterdir():
                shutil.chown(f, "postgres")
        proc = self.spawn(
            "pgbouncer",
            [*self._as_pg(), find_binary("pgbouncer"), str(base / "pgbouncer.ini")],
            port=port,
        )
        if not wait_port(port, 15, proc.popen):
            raise RuntimeError(f"PgBouncer did not start:\n{proc.tail()}")

    def start_redis(self) -> None:
        port = self.ports["redis"] = free_port()
        argv = [find_binary("redis-server"), "--bind", "127.0.0.1", "--port", str(port)]
        argv += ["--save", "", "--appendonly", "no", "--dir", str(self.scratch)]
        proc = self.spawn("redis", argv, port=port)
        if not wait_port(port, 15, proc.popen):
            raise RuntimeError(f"Redis did not start:\n{proc.tail()}")

    def app_env(self, **extra: str) -> dict[str, str]:
        """The settings every app, worker and beat process of the cluster shares."""
        redis = f"redis://127.0.0.1:{self.ports['redis']}"
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": os.environ.get("HOME", "/tmp"),
            "LANG": "C.UTF-8",
            "DEBUG": "false",
            "SECURE_SSL": "false",
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "SECRET_KEY": SECRET,
            "LOG_LEVEL": "WARNING",
            "DATABASE_URL": f"postgres://postgres@127.0.0.1:{self.ports['pgbouncer']}/loopx",
            "LOOPX_PG_PREPARED_STATEMENTS": "false",
            "CONN_MAX_AGE": "60",
            "CACHE_URL": f"{redis}/1",
            "LOOPX_THROTTLE_STORE": "cache",
            "LOOPX_CELERY_BROKER_URL": f"{redis}/0",
            # The leg's clock is seconds, not minutes: a committed receipt without its hook
            # phase is due for recovery after 3 s (the schedule runs every 2 s, set by
            # tests/cluster/seed.py), and a killed worker's unacknowledged task is handed
            # to another worker after 10 s (production: 60 s and 900 s).
            "LOOPX_RECOVERY_GRACE_SECONDS": "3",
            "LOOPX_CELERY_VISIBILITY_TIMEOUT": "10",
            # One token carries each scenario's traffic: only the throttle scenario's
            # scope (doctor) keeps a limit, the one the issue measured (12/min).
            "LOOPX_THROTTLE_WRITE": "off",
            "LOOPX_THROTTLE_INGEST": "off",
            "LOOPX_THROTTLE_SETTLE": "off",
            "LOOPX_THROTTLE_REVIEW": "off",
            "LOOPX_THROTTLE_DOCTOR": "12/min",
            "LOOPX_METRICS_TOKEN": "cluster-leg-metrics-token",
            "PYTHONDONTWRITEBYTECODE": "1",
        }
        env.update(extra)
        return env

    def python(self, *argv: str, env_extra: dict | None = None, timeout: float = 180):
        """Our Python with the cluster's settings: ``python("manage.py", "migrate")``,
        ``python("-m", "tests.cluster.seed")``, ``python("-c", code)``."""
        return subprocess.run(
            [PYTHON, *argv],
            cwd=ROOT,
            env=self.app_env(**(env_extra or {})),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def manage(self, *args: str, env_extra: dict | None = None):
        return self.python("manage.py", *args, env_extra=env_extra)

    def served_by(self, tries: int = 6) -> set[str]:
        """The instances HAProxy routes ``tries`` front-page requests to."""
        import http.client

        names = set()
        for _ in range(tries):
            conn = http.client.HTTPConnection("127.0.0.1", self.ports["haproxy"], timeout=5)
            try:
                conn.request("GET", "/", headers={"Host": "127.0.0.1"})
                response = conn.getresponse()
                response.read()
                if response.status == 200:
                    names.add(response.getheader("X-Served-By") or "")
            except (OSError, http.client.HTTPException):
                pass
            finally:
                conn.close()
        return names

    def haproxy_stats(self) -> dict[str, dict[str, str]]:
        """HAProxy's CSV statistics of the ``app`` backend, by server name (and
        ``BACKEND``): ``status``, ``wretr`` (retries), ``wredis`` (redispatches) …"""
        import csv
        import io
        import urllib.request

        url = f"http://127.0.0.1:{self.ports['haproxy_stats']}/;csv"
        with urllib.request.urlopen(url, timeout=5) as response:
            text = response.read().decode().lstrip("# ")
        rows = csv.DictReader(io.StringIO(text))
        return {r["svname"]: r for r in rows if r.get("pxname") == "app"}

    def wait_backends_up(self, seconds: float, expected=("app1", "app2")) -> bool:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.served_by() >= set(expected):
                return True
            time.sleep(0.3)
        return False

    def start_app(self, name: str, **env_extra: str) -> Proc:
        port = self.ports[name] = free_port()
        argv = [PYTHON, "-m", "gunicorn", "loopx_site.wsgi:application"]
        argv += [
            "--bind",
            f"127.0.0.1:{port}",
            *["--workers", "1", "--threads", "4", "--timeout", "60"],
        ]
        argv += ["--graceful-timeout", "5", "--log-level", "warning"]
        env_extra.setdefault("PROMETHEUS_MULTIPROC_DIR", self.metrics_dir(name))
        proc = self.spawn(name, argv, env=self.app_env(**env_extra), port=port)
        return proc

    def metrics_dir(self, name: str) -> str:
        """An empty ``PROMETHEUS_MULTIPROC_DIR`` of one process tree (one per "host")."""
        where = self.scratch / "metrics" / name
        where.mkdir(parents=True, exist_ok=True)
        for stale in where.glob("*.db"):
            stale.unlink()
        return str(where)

    def start_haproxy(self) -> Proc:
        port = self.ports["haproxy"] = free_port()
        stats = self.ports["haproxy_stats"] = free_port()
        servers = "\n".join(
            f"  server {n} 127.0.0.1:{self.ports[n]} check inter 300ms fall 2 rise 2"
            for n in ("app1", "app2")
        )
        cfg = self.scratch / "haproxy.cfg"
        cfg.write_text(
            "global\n  maxconn 512\n"
            "defaults\n  mode http\n  timeout connect 2s\n  timeout client 60s\n"
            "  timeout server 60s\n  timeout check 2s\n"
            # A request the dead instance never answered is retried on the other one:
            # every write carries its idempotency key (operation id, event id, turn).
            "  retries 2\n  option redispatch 1\n"
            "  retry-on conn-failure empty-response response-timeout\n"
            f"frontend hosts\n  bind 127.0.0.1:{port}\n  default_backend app\n"
            "backend app\n  balance roundrobin\n  http-response set-header X-Served-By %s\n"
            "  option httpchk\n  http-check send meth GET uri / ver HTTP/1.1 hdr Host 127.0.0.1\n"
            "  http-check expect status 200\n"
            f"{servers}\n"
            # What an operator watches: UP/DOWN, retries, redispatches (CSV at /;csv).
            f"frontend stats\n  bind 127.0.0.1:{stats}\n  stats enable\n  stats uri /\n"
        )
        proc = self.spawn("haproxy", [find_binary("haproxy"), "-db", "-f", str(cfg)], port=port)
        if not wait_port(port, 15, proc.popen):
            raise RuntimeError(f"HAProxy did not start:\n{proc.tail()}")
        return proc

    def start_worker(self, name: str, pool: str = "solo") -> Proc:
        """One Celery worker on the ``loopx`` queue and a queue of its own (``name``):
        ``solo`` (one process to SIGKILL) or ``prefork`` with one pool process (its tasks,
        and the hook workers they fork, run in a forked child of the worker)."""
        argv = [PYTHON, "-m", "celery", "-A", "loopx_site.celery", "worker"]
        argv += ["--queues", f"loopx,{name}", "--pool", pool, "--hostname", f"{name}@cluster-leg"]
        if pool == "prefork":
            argv += ["--concurrency", "1"]
        argv += ["--loglevel", "INFO", "--without-gossip", "--without-mingle"]
        port = self.ports[f"{name}_metrics"] = free_port()
        env = self.app_env(
            PROMETHEUS_MULTIPROC_DIR=self.metrics_dir(name), LOOPX_METRICS_WORKER_PORT=str(port)
        )
        return self.spawn(name, argv, env=env)

    def start_beat(self) -> Proc:
        """``celery beat`` on django-celery-beat's DatabaseScheduler (the admin's rows)."""
        argv = [PYTHON, "-m", "celery", "-A", "loopx_site.celery", "beat", "--loglevel", "INFO"]
        argv += ["--scheduler", "django_celery_beat.schedulers:DatabaseScheduler"]
        argv += ["--pidfile", str(self.scratch / "logs" / "beat.pid")]
        return self.spawn("beat", argv, env=self.app_env())

    def redis_cli(self, *args: str) -> str:
        where = ["-h", "127.0.0.1", "-p", str(self.ports["redis"])]
        run = _run([find_binary("redis-cli") or "redis-cli", *where, *args])
        return run.stdout.strip()


def _run(argv: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, check=False)


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(p) for p in text.split()]
