"""Settings for LoopX Memory.

Every value comes from the environment (django-environ) with a safe local default;
``.env.example`` documents them. ``DEBUG`` defaults to false; ``make run`` turns it on
for the local development server.
"""

import logging.config
import os
import sys
from pathlib import Path

import environ

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

DEBUG = env.bool("DEBUG", default=False)
SECRET_KEY = env.str("SECRET_KEY", default="")
if not SECRET_KEY:
    # Zero-configuration local use: a random key kept in the ignored .local/ folder.
    # Production sets SECRET_KEY in the environment.
    _key_file = BASE_DIR / ".local" / "secret_key"
    if not _key_file.exists():
        import secrets

        _key_file.parent.mkdir(mode=0o700, exist_ok=True)
        # Created readable by the server's user only (never world-readable, not even for
        # an instant): a sandboxed provider child runs as another user (docs/security.md).
        _fd = os.open(_key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(_fd, "w") as _out:
            _out.write(secrets.token_urlsafe(50))
    SECRET_KEY = _key_file.read_text().strip()
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost"])

LOOPX_RUNTIME_ID = env.str("LOOPX_RUNTIME_ID", default="local")

# OpenViking memory service (optional; the ``openviking`` Reward Memory provider). Unset
# base URL or user id ⇒ the provider reports ``not_installed`` and callers fail open.
# Retention (docs/operators.md "Retention"): rows older than N days that a replay or an
# audit no longer needs are removed daily by `loopx.core.retention`; 0 keeps them forever.
LOOPX_RETENTION_DAYS = {
    "receipts": env.int("LOOPX_RETAIN_RECEIPTS_DAYS", default=0),
    "outbox": env.int("LOOPX_RETAIN_OUTBOX_DAYS", default=0),
    "dispatches": env.int("LOOPX_RETAIN_DISPATCHES_DAYS", default=0),
    "background_runs": env.int("LOOPX_RETAIN_BACKGROUND_RUNS_DAYS", default=0),
}
OPENVIKING_BASE_URL = env.str("OPENVIKING_BASE_URL", default="")
OPENVIKING_API_KEY = env.str("OPENVIKING_API_KEY", default="")
OPENVIKING_USER_ID = env.str("OPENVIKING_USER_ID", default="")
OPENVIKING_TIMEOUT_SECONDS = env.float("OPENVIKING_TIMEOUT_SECONDS", default=10.0)
# Review marks a candidate ``duplicate_of`` an active record of its corpus when their
# texts' embedding cosine reaches this (0.90: no false merge on real near-duplicate
# instructions), or their normalised tokens' Jaccard reaches the second (restatements).
REWARD_MEMORY_DUPLICATE_THRESHOLD = env.float("REWARD_MEMORY_DUPLICATE_THRESHOLD", default=0.90)
REWARD_MEMORY_DUPLICATE_JACCARD = env.float("REWARD_MEMORY_DUPLICATE_JACCARD", default=0.80)

INSTALLED_APPS = [
    "loopx_site.core.admin_apps.LoopxAdminConfig",  # admin discovery only where it is used
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "loopx_site.core",
    "preferences",
    "reward_memory",
    "hooks",
    "turn_recall",
    "loopx_site.mcp",
]


def _host_cli_call(argv: list[str]) -> bool:
    """``manage.py <one of the apps' own commands>``: a host's per-turn CLI call."""
    if len(argv) < 2 or Path(argv[0]).name not in ("manage.py", "django-admin"):
        return False
    commands = [*BASE_DIR.glob("*/management/commands/*.py")]
    commands += BASE_DIR.glob("loopx_site/*/management/commands/*.py")
    return argv[1] in {p.stem for p in commands if not p.stem.startswith("_")}


# Periodic schedules of the background tasks (docs/background-work.md), edited in the
# admin and read by `celery beat`. Every process has them except the apps' own CLI
# commands, which never read them (the app imports Celery: ~0.1 s of each host call).
if not _host_cli_call(sys.argv):
    INSTALLED_APPS.append("django_celery_beat")

# Apps that only serve web pages (the admin, sessions, messages, static files, the API and
# its schema). A host's per-turn CLI call never uses them, and loading them is most of
# what separates its start-up from Django's own (the admin alone imports the forms, the
# template engine and every widget): such a call goes without (docs/development.md
# "Start-up"). The long-running MCP server and the demo loader keep the full set.
WEB_ONLY_APPS = (
    "loopx_site.core.admin_apps.LoopxAdminConfig",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
)
FULL_SITE_COMMANDS = frozenset({"mcp", "loopx_demo"})
if _host_cli_call(sys.argv) and sys.argv[1] not in FULL_SITE_COMMANDS:
    INSTALLED_APPS = [app for app in INSTALLED_APPS if app not in WEB_ONLY_APPS]

# The admin index lists apps in this order (an operator's day: Reward Memory first).
LOOPX_ADMIN_APP_ORDER = (
    "reward_memory",
    "preferences",
    "hooks",
    "turn_recall",
    "core",
    "django_celery_beat",
    "auth",
)

MIDDLEWARE = [
    "loopx_site.core.logging.RequestIdMiddleware",  # request id + one log line per request
    "loopx_site.core.metrics.MetricsMiddleware",  # requests per route (docs/operations.md)
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",  # admin and API-docs assets under gunicorn
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Innermost: database outage → 503, unknown /api/ path → JSON 404 envelope.
    "loopx_site.core.middleware.EdgeErrorsMiddleware",
]

ROOT_URLCONF = "loopx_site.urls"
WSGI_APPLICATION = "loopx_site.wsgi.application"
ASGI_APPLICATION = "loopx_site.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "loopx_site" / "templates"],  # project overrides of the admin
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}")}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # IMMEDIATE: a write transaction takes SQLite's write lock when it begins, so two
    # conditional writers serialise instead of failing late with "database is locked".
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "transaction_mode": "IMMEDIATE",
            "timeout": 30,
            # Applied once per connection (connections persist, see CONN_MAX_AGE): WAL,
            # commits durable at checkpoints, a 64 MiB page cache and memory-mapped reads
            # so hot index pages are not re-read through system calls on every query.
            "init_command": (
                "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; "
                "PRAGMA cache_size=-65536; PRAGMA mmap_size=268435456; PRAGMA temp_store=MEMORY;"
            ),
        }
    )
    # Persistent connections: reopening the file and re-running the PRAGMAs cost ~2 ms
    # per request.
    DATABASES["default"].setdefault("CONN_MAX_AGE", env.int("CONN_MAX_AGE", default=600))
    # The test database is a file (not :memory:) so tests can race real processes
    # against it; one per test run, so parallel runs never share it.
    import os
    import tempfile

    DATABASES["default"]["TEST"] = {
        "NAME": env.str(
            "LOOPX_TEST_SQLITE_PATH",
            default=str(Path(tempfile.gettempdir()) / f"loopx-test-{os.getpid()}.sqlite3"),
        )
    }
else:
    DATABASES["default"].setdefault("CONN_MAX_AGE", env.int("CONN_MAX_AGE", default=60))
    DATABASES["default"].setdefault("CONN_HEALTH_CHECKS", True)
    # Server-side binding lets psycopg prepare a statement once it has run 5 times on a
    # connection: the journal's statements were spending ~70% of their database time in
    # the planner (measured with pg_stat_statements). Off for transaction-pooling
    # PgBouncer setups that cannot keep prepared statements.
    if env.bool("LOOPX_PG_PREPARED_STATEMENTS", default=True):
        DATABASES["default"].setdefault("OPTIONS", {}).update(
            {"server_side_binding": True, "prepare_threshold": 5}
        )
    else:
        # Behind PgBouncer in transaction pooling (docs/topology.md) consecutive
        # transactions may run on different server connections: psycopg must never
        # prepare (its own default prepares after 5 runs), and no cursor may outlive
        # its transaction (named server-side cursors of .iterator()).
        DATABASES["default"].setdefault("OPTIONS", {}).update({"prepare_threshold": None})
        DATABASES["default"].setdefault("DISABLE_SERVER_SIDE_CURSORS", True)

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
# ISO dates and 24-hour UTC times on the operator pages (loopx_site/formats/en/formats.py).
FORMAT_MODULE_PATH = ["loopx_site.formats"]

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    # Compressed copies from `collectstatic`, served by WhiteNoise (no manifest, so
    # templates also render before collectstatic has run).
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}

# Security: production runs with DEBUG=false behind TLS (SECURE_SSL=true).
SECURE_SSL = env.bool("SECURE_SSL", default=not DEBUG)
SECURE_SSL_REDIRECT = SECURE_SSL
SESSION_COOKIE_SECURE = SECURE_SSL
CSRF_COOKIE_SECURE = SECURE_SSL
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=31536000 if SECURE_SSL else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = SECURE_SSL
SECURE_HSTS_PRELOAD = SECURE_SSL
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])
DATA_UPLOAD_MAX_MEMORY_SIZE = env.int("DATA_UPLOAD_MAX_MEMORY_SIZE", default=1024 * 1024)

# Throttle counters (loopx_site.core.api.throttles) are shared by every server process:
# LOOPX_THROTTLE_STORE=database (default) counts in the database with one atomic upsert;
# =cache counts in the default cache with add + incr, which must be atomic there: Redis
# (CACHE_URL=redis://host:6379/0: Django's RedisCache) or Memcached. The cache
# itself defaults to local memory (per process; nothing shared depends on it).
CACHES = {"default": env.cache("CACHE_URL", default="locmemcache://loopx")}
if CACHES["default"]["BACKEND"].startswith("django_redis."):
    # redis:// always selects Django's own RedisCache (atomic INCR), whatever else is
    # installed.
    CACHES["default"]["BACKEND"] = "django.core.cache.backends.redis.RedisCache"
LOOPX_THROTTLE_STORE = env.str("LOOPX_THROTTLE_STORE", default="database")
if LOOPX_THROTTLE_STORE not in ("database", "cache"):
    from django.core.exceptions import ImproperlyConfigured

    raise ImproperlyConfigured("LOOPX_THROTTLE_STORE must be database or cache.")

# Prometheus metrics at /metrics (loopx_site.core.metrics, docs/operations.md). A scrape
# passes with `Authorization: Bearer $LOOPX_METRICS_TOKEN` or from an address inside
# LOOPX_METRICS_NETWORKS (comma-separated CIDRs; loopback by default under DEBUG). With
# neither configured the endpoint answers 404. Several processes (gunicorn workers,
# Celery) share counts through PROMETHEUS_MULTIPROC_DIR (an empty directory per start).
LOOPX_METRICS_TOKEN = env.str("LOOPX_METRICS_TOKEN", default="")
LOOPX_METRICS_NETWORKS = env.str(
    "LOOPX_METRICS_NETWORKS", default="127.0.0.0/8,::1/128" if DEBUG else ""
)


def _throttle_rate(name: str, default: str) -> str | None:
    """A DRF rate such as ``30/min``; ``off`` disables that scope's limit."""
    value = env.str(name, default=default).strip()
    return None if value.lower() in {"off", "none", ""} else value


REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "loopx_site.core.api.auth.HostTokenAuthentication",
        "loopx_site.core.api.auth.OperatorSessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["loopx_site.core.api.permissions.IsHostOrOperator"],
    "DEFAULT_RENDERER_CLASSES": ["loopx_site.core.api.renderers.DocumentRenderer"],
    "DEFAULT_PARSER_CLASSES": ["loopx_site.core.api.parsers.BoundedJSONParser"],
    # Per credential (host token or operator account), never per IP address; a view opts
    # in with `throttle_scope` (its writes are limited). Every call that runs a provider,
    # writes memory or settles a turn is in one scope.
    "DEFAULT_THROTTLE_CLASSES": ["loopx_site.core.api.throttles.CredentialScopedRateThrottle"],
    "DEFAULT_THROTTLE_RATES": {
        # semantic preference recall / doctor (provider runs)
        "recall": _throttle_rate("LOOPX_THROTTLE_RECALL", "60/min"),
        "doctor": _throttle_rate("LOOPX_THROTTLE_DOCTOR", "12/min"),
        # Reward Memory ingest; recall and boundary hooks (provider runs, receipts)
        "ingest": _throttle_rate("LOOPX_THROTTLE_INGEST", "120/min"),
        "reward_recall": _throttle_rate("LOOPX_THROTTLE_REWARD_RECALL", "60/min"),
        # Reward Memory review, review apply, revoke, supersede (provider sync)
        "review": _throttle_rate("LOOPX_THROTTLE_REVIEW", "60/min"),
        "turn_recall": _throttle_rate("LOOPX_THROTTLE_TURN_RECALL", "120/min"),
        # turn settle (primary writeback + post-writeback hooks)
        "settle": _throttle_rate("LOOPX_THROTTLE_SETTLE", "60/min"),
        # every other write: preferences remember/retire, application receipts, Todos,
        # Goal registration
        "write": _throttle_rate("LOOPX_THROTTLE_WRITE", "120/min"),
    },
    "DEFAULT_SCHEMA_CLASS": "loopx_site.core.api.schema.LoopxAutoSchema",
    "EXCEPTION_HANDLER": "loopx_site.core.api.errors.exception_handler",
    "UNAUTHENTICATED_USER": None,
}
if DEBUG:
    REST_FRAMEWORK["DEFAULT_RENDERER_CLASSES"].append(
        "rest_framework.renderers.BrowsableAPIRenderer"
    )

SPECTACULAR_SETTINGS = {
    "TITLE": "LoopX Memory API",
    "DESCRIPTION": (
        "Memory and capability-hook control plane for autonomous coding agents. "
        "Authenticate with a host token (`Authorization: Bearer <token>`) scoped to one "
        "Goal (optionally one Agent). Every write previews unless `execute` is true."
    ),
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
}

# Post-writeback hook providers installed by the operator (composition root): dotted
# paths to provider classes. The hook core never imports a concrete capability.
LOOPX_POST_WRITEBACK_HOOKS = env.list(
    "LOOPX_POST_WRITEBACK_HOOKS",
    default=["hooks.capabilities.periodic_report.PeriodicReportRuntimeTrigger"],
)
# The default execution profile's hook phase switch and optional allowlist of hook ids.
LOOPX_POST_WRITEBACK_HOOKS_ENABLED = env.bool("LOOPX_POST_WRITEBACK_HOOKS_ENABLED", default=True)
LOOPX_POST_WRITEBACK_HOOK_ALLOWLIST = env.list("LOOPX_POST_WRITEBACK_HOOK_ALLOWLIST", default=None)
# Where a hook provider runs (hooks.isolation), each a process killed at the hook's
# timeout: "worker" (default) keeps a forked child per hook between invocations (no fork
# per call) and kills and replaces it when it overruns or dies; "process" forks a child
# per invocation (nothing survives an invocation; costs a fork each, growing with this
# process's memory). "thread" runs providers on threads of this process (hosts without
# fork; a hung provider keeps its thread and its slot).
LOOPX_HOOK_ISOLATION = env.str("LOOPX_HOOK_ISOLATION", default="worker")
if LOOPX_HOOK_ISOLATION not in ("process", "worker", "thread"):
    from django.core.exceptions import ImproperlyConfigured

    raise ImproperlyConfigured("LOOPX_HOOK_ISOLATION must be process, worker or thread.")
# Hook invocations running at once per process; when all are busy, later hooks fail with
# dispatch_budget_exhausted (retried by hooks replay).
LOOPX_HOOK_WORKERS = env.int("LOOPX_HOOK_WORKERS", default=4)

# The apps' dashboard sections and panels, and the soft preferences the local
# semantic-preference provider also ranks, are registered by the apps themselves in
# `AppConfig.ready()` (loopx_site/core/contributions.py), not declared here.

# Demo data loaders run in order by `manage.py loopx_demo`; each app contributes one.
LOOPX_DEMO_LOADERS = [
    "loopx_site.core.demo.load",
    "preferences.demo.load",
    "preferences.demo_recall.load",
    "reward_memory.demo.load",
    "hooks.demo.load",
    "turn_recall.demo.load",
]

# Background work on Celery (loopx_site/celery.py, docs/background-work.md). Unset broker ⇒
# the in-process memory transport: nothing leaves the process and nothing schedules, so
# `make run` needs no Redis; the management commands stay for operators.
CELERY_BROKER_URL = env.str("LOOPX_CELERY_BROKER_URL", default="") or "memory://"
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# A task is acknowledged after it ran, and re-queued when its worker process dies, so a
# killed worker's task runs again elsewhere (every task is idempotent); one task at a time
# per worker process.
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_IGNORE_RESULT = True  # what a run did is its core.BackgroundRun row
CELERY_TASK_DEFAULT_QUEUE = "loopx"
CELERY_TIMEZONE = "UTC"
CELERY_ENABLE_UTC = True
# Default limits of a task (each task also declares its own): the soft limit raises in
# the task, the hard limit kills the worker process (then the task is re-queued).
CELERY_TASK_SOFT_TIME_LIMIT = env.int("LOOPX_CELERY_SOFT_TIME_LIMIT", default=240)
CELERY_TASK_TIME_LIMIT = env.int("LOOPX_CELERY_TIME_LIMIT", default=300)
# Redis redelivers a task not acknowledged within this many seconds: above every hard
# time limit, so a running task is never handed to a second worker.
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": env.int("LOOPX_CELERY_VISIBILITY_TIMEOUT", default=900)
}
CELERY_WORKER_HIJACK_ROOT_LOGGER = False  # keep the LOGGING below
CELERY_TASK_ALWAYS_EAGER = env.bool("LOOPX_CELERY_ALWAYS_EAGER", default=False)
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
# The hook phase of a committed receipt is recovered by a worker only once the settle
# that committed it had this long to run the phase itself.
LOOPX_RECOVERY_GRACE_SECONDS = env.int("LOOPX_RECOVERY_GRACE_SECONDS", default=60)

# One line per event (key=value, or JSON with LOG_FORMAT=json) carrying the request id
# (loopx_site.core.logging). Django's own 4xx request warnings are dropped in favour of
# the one request line; the development server's access lines likewise.
LOG_LEVEL = env.str("LOG_LEVEL", default="INFO").upper()
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {
        "request_id": {"()": "loopx_site.core.logging.RequestIdFilter"},
        "expected_4xx": {"()": "loopx_site.core.logging.ExpectedClientErrorFilter"},
        "no_traceback": {"()": "loopx_site.core.logging.NoTraceback"},
    },
    "formatters": {
        "kv": {"()": "loopx_site.core.logging.KeyValueFormatter"},
        "json": {"()": "loopx_site.core.logging.JsonFormatter"},
    },
    "handlers": {
        "stderr": {
            "class": "logging.StreamHandler",
            "formatter": env.str("LOG_FORMAT", default="kv"),
            "filters": ["request_id"],
        },
    },
    "root": {"handlers": ["stderr"], "level": LOG_LEVEL},
    "loggers": {
        "django": {"handlers": ["stderr"], "level": LOG_LEVEL, "propagate": False},
        "django.request": {
            "handlers": ["stderr"],
            "level": LOG_LEVEL,
            "filters": ["expected_4xx"],
            "propagate": False,
        },
        # An oversized body is an expected refusal (413): one line, no traceback.
        "django.security.RequestDataTooBig": {
            "handlers": ["stderr"],
            "level": "WARNING",
            "filters": ["no_traceback"],
            "propagate": False,
        },
        "django.server": {"handlers": [], "level": "CRITICAL", "propagate": False},
        "django.db.backends": {"level": "WARNING"},
        "django.utils.autoreload": {"level": "WARNING"},
        "loopx": {"handlers": ["stderr"], "level": LOG_LEVEL, "propagate": False},
    },
}
# Applied here rather than by Django: Django first applies its DEFAULT_LOGGING, whose
# e-mail handler imports the debug views and the template engine (~10 ms of every CLI
# call a host makes), and every logger it sets up is set up again above anyway.
LOGGING_CONFIG = None
logging.config.dictConfig(LOGGING)
