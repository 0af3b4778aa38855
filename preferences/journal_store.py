"""The preference journal's raw SQL — the one module that holds it.

The journal's hot paths are single statements the ORM cannot express (the scope
resolved through the registry with its subjects joined in one round trip; a commit's
row lock, operation insert, subject upsert and compare-and-swap of the scope's
revision). Their text is private to this module (``_READ_SQL``, ``_SNAPSHOT_SQL``,
``_INSERT_OPERATION_SQL``, ``_UPDATE_SUBJECT_SQL``, ``_INSERT_SUBJECT_SQL``,
``_UPDATE_SCOPE_SQL``); callers use the functions below:

* ``read_rows`` — the current-view read of ``preferences.selectors.current_rows``;
* ``snapshot_rows`` — the scope snapshot of a write (``lock=True`` under a commit);
* ``commit`` — persist one evaluated operation (the caller holds the scope lock);
* ``write_transaction`` — a write's transaction and the cursor its statements run on;
* ``statement_cursor`` — the cursor these statements run on (reads).
"""

import contextlib
import datetime as dt
import threading
from typing import Any

from django.db import DEFAULT_DB_ALIAS, IntegrityError, connection, connections, transaction

from loopx_site.core.models import Agent, Goal
from preferences.models import PreferenceOperation, PreferenceScope, PreferenceSubject

_SCOPE = PreferenceScope._meta.db_table
_SUBJECT = PreferenceSubject._meta.db_table
_OPERATION = PreferenceOperation._meta.db_table
_GOAL = Goal._meta.db_table
_AGENT = Agent._meta.db_table
_RECEIPT_FIELD = PreferenceOperation._meta.get_field("receipt")


def _collate() -> str:
    return ' COLLATE "C"' if connection.vendor == "postgresql" else ""


# -- the one-statement scope read ----------------------------------------------------------
_READ_SQL: dict[str, str] = {}


def _read_sql(vendor: str) -> str:
    sql = _READ_SQL.get(vendor)
    if sql is None:
        sql = _READ_SQL[vendor] = (
            "SELECT s.revision, s.used_bytes, sub.item, "  # noqa: S608 - table names are constants
            "CASE WHEN sub.expires_at IS NOT NULL AND sub.expires_at <= %s THEN 1 ELSE 0 END, "
            "sub.revision "
            f"FROM {_SCOPE} s "
            f"JOIN {_GOAL} g ON g.id = s.goal_id "
            f"JOIN {_AGENT} a ON a.id = s.agent_id AND a.goal_id = g.id "
            f"LEFT JOIN {_SUBJECT} sub ON sub.scope_id = s.id "
            "WHERE g.goal_id = %s AND a.agent_id = %s AND s.runtime_id = %s "
            "AND s.state_ref = g.state_ref AND s.instance_id = g.instance_id "
            "AND s.revision IS NOT NULL "
            f'ORDER BY sub."key"{_collate()}'
        )
    return sql


def read_rows(*, now: dt.datetime, goal_id: str, agent_id: str, runtime_id: str) -> list[tuple]:
    """``(revision, used_bytes, item, expired 0/1, subject revision)`` per current subject
    of the scope the registered Goal points to now (one row with ``item`` NULL for a
    committed scope without subjects; none for a scope that never committed)."""
    db = connections[DEFAULT_DB_ALIAS]
    params = (db.ops.adapt_datetimefield_value(now), goal_id, agent_id, runtime_id)
    return _fetch_all(_read_sql(db.vendor), params)


# -- a write's snapshot --------------------------------------------------------------------
_SNAPSHOT_SQL: dict[tuple[str, bool], str] = {}


def _snapshot_sql(lock: bool, vendor: str) -> str:
    sql = _SNAPSHOT_SQL.get((vendor, lock))
    if sql is not None:
        return sql
    postgres = vendor == "postgresql"
    # PostgreSQL: a row lock that waited returns the locked row's newest version but the
    # joined rows and subqueries of the statement's snapshot; the journal's newest
    # revision as seen by that snapshot tells the two apart (on SQLite the write lock is
    # taken at BEGIN).
    newest = (
        f"(SELECT MAX(j.resulting_revision) FROM {_OPERATION} j WHERE j.scope_id = s.id)"  # noqa: S608 - table names are constants
        if postgres
        else "s.revision"
    )
    # Every current subject's stored item as one JSON array body (order is irrelevant:
    # the view is sorted by key), so the row count stays one and one parse decodes all.
    concat = "string_agg(x.item, ',')" if postgres else "group_concat(x.item, ',')"
    # PostgreSQL: besides the scope row, a KEY SHARE lock on the Goal row — writers never
    # block one another on it, but ``goal register`` (FOR UPDATE) waits for them and they
    # for it, so no write commits into a scope the Goal has just moved away from, and the
    # high-water mark below is never read while another scope of the Agent is advancing.
    sql = _SNAPSHOT_SQL[(vendor, lock)] = (
        "SELECT s.id, s.revision, s.used_bytes, s.migrated_from_id, g.state_ref, "  # noqa: S608 - table names are constants
        f"g.instance_id, op.intent_hash, op.receipt, sub.item, sub.size, {newest}, "
        f"(SELECT {concat} FROM {_SUBJECT} x WHERE x.scope_id = s.id), "
        f"(SELECT MAX(o.revision) FROM {_SCOPE} o "
        "WHERE o.agent_id = s.agent_id AND o.runtime_id = s.runtime_id) "
        f"FROM {_SCOPE} s "
        f"JOIN {_GOAL} g ON g.id = s.goal_id "
        f"JOIN {_AGENT} a ON a.id = s.agent_id AND a.goal_id = g.id "
        f"LEFT JOIN {_OPERATION} op ON op.scope_id = s.id AND op.operation_id = %s "
        f'LEFT JOIN {_SUBJECT} sub ON sub.scope_id = s.id AND sub."key" = %s '
        "WHERE g.goal_id = %s AND a.agent_id = %s AND s.runtime_id = %s "
        "AND s.state_ref = g.state_ref AND s.instance_id = g.instance_id"
        + (" FOR UPDATE OF s FOR KEY SHARE OF g" if lock and postgres else "")
    )
    return sql


def snapshot_rows(
    *,
    operation_id: str,
    key: str,
    goal_id: str,
    agent_id: str,
    runtime_id: str,
    lock: bool = False,
    cursor=None,
) -> list[tuple]:
    """The scope's one snapshot row (or none): ``(scope id, revision, used_bytes,
    migrated_from_id, state_ref, instance_id, operation's intent_hash, its receipt, the
    key's stored item, its size, newest journal revision, every current item joined by
    commas, the Agent's high-water revision)``. ``lock`` locks the scope (a commit)."""
    params = (operation_id, key, goal_id, agent_id, runtime_id)
    if cursor is None:
        return _fetch_all(_snapshot_sql(lock, connection.vendor), params)
    cursor.execute(_snapshot_sql(lock, cursor.db.vendor), params)
    return cursor.fetchall()


# -- a commit ------------------------------------------------------------------------------
_INSERT_OPERATION_SQL = (
    f"INSERT INTO {_OPERATION} (scope_id, sequence, operation_id, kind, "  # noqa: S608 - table names are constants
    '"key", statement, source_ref, source_quote, expected_revision, resulting_revision, '
    "predecessor_operation_id, expires_at, intent_hash, receipt, created_at) "
    "VALUES (%s, "
    f"(SELECT COALESCE(MAX(q.sequence), 0) + 1 FROM {_OPERATION} q WHERE q.scope_id = %s), "
    "%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id"
)
_UPDATE_SUBJECT_SQL = (
    f"UPDATE {_SUBJECT} SET state = %s, statement = %s, "  # noqa: S608 - table names are constants
    "source_ref = %s, expires_at = %s, revision = %s, operation_id = %s, "
    'updated_at = %s, item = %s, size = %s WHERE scope_id = %s AND "key" = %s'
)
_INSERT_SUBJECT_SQL = (
    f"INSERT INTO {_SUBJECT} (state, statement, source_ref, expires_at, "  # noqa: S608 - table names are constants
    'revision, operation_id, updated_at, item, size, scope_id, "key") '
    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
)
_UPDATE_SCOPE_SQL = (
    f"UPDATE {_SCOPE} SET revision = %s, "  # noqa: S608 - table names are constants
    "journal_started_at = COALESCE(journal_started_at, %s), subject_count = %s, "
    "used_bytes = %s WHERE id = %s AND "
)


def commit(
    cursor,
    *,
    scope_id: int,
    expected_scope_revision: int | None,
    revision: int,
    action: str,
    key: str,
    statement: str | None,
    source_ref: str,
    source_quote: str,
    expected_revision: int | None,
    predecessor_operation_id: str | None,
    operation_id: str,
    expires_at: dt.datetime | None,
    state: str,
    item_text: str,
    item_size: int,
    existing: bool,
    subject_count: int,
    used_bytes: int,
    receipt: dict[str, Any],
    now: dt.datetime,
) -> None:
    """Persist one evaluated operation (three statements); the caller holds the scope
    lock. The scope's revision moves by compare-and-swap from ``expected_scope_revision``."""
    db = cursor.db
    at = datetime_param(db, now)
    expires = None if expires_at is None else datetime_param(db, expires_at)
    cursor.execute(
        _INSERT_OPERATION_SQL,
        (
            scope_id,
            scope_id,  # the scope's next gap-free sequence (the caller holds its lock)
            operation_id,
            action,
            key,
            statement,
            source_ref,
            source_quote,
            expected_revision,
            revision,
            predecessor_operation_id,
            expires,
            receipt["intent_hash"],
            _receipt_param(db, receipt),
            at,
        ),
    )
    op_pk = cursor.fetchone()[0]
    subject = (state, statement, source_ref, expires, revision, op_pk, at, item_text, item_size)
    cursor.execute(
        _UPDATE_SUBJECT_SQL if existing else _INSERT_SUBJECT_SQL, (*subject, scope_id, key)
    )
    if expected_scope_revision is None:
        cursor.execute(
            _UPDATE_SCOPE_SQL + "revision IS NULL",
            (revision, at, subject_count, used_bytes, scope_id),
        )
    else:
        cursor.execute(
            _UPDATE_SCOPE_SQL + "revision = %s",
            (revision, at, subject_count, used_bytes, scope_id, expected_scope_revision),
        )
    if cursor.rowcount != 1:  # impossible while the lock is held; the backstop says so
        raise IntegrityError("scope revision moved under the lock")


def datetime_param(db, value: dt.datetime) -> Any:
    """``value`` as Django binds it to a DateTimeField (``adapt_datetimefield_value``).
    On SQLite with time zone support, for a UTC value on a UTC connection (the clock's
    and the settings'), that is ``str`` of the naive value — here the aware value's
    text without its ``+00:00``, skipping the per-call settings and zone checks."""
    if db.vendor == "sqlite" and value.tzinfo is dt.UTC and db.timezone is dt.UTC:
        return str(value)[:-6]
    return db.ops.adapt_datetimefield_value(value)


#: A receipt's fields in the order ``preferences.services.journal`` builds them.
_RECEIPT_KEYS = ("operation_id", "intent_hash", "key", "state", "supersedes_operation_id")
_RECEIPT_TEXT = (
    '{"operation_id": "%s", "intent_hash": "%s", "key": "%s", "state": "%s", '
    '"supersedes_operation_id": %s}'
)


def _receipt_param(db, receipt: dict[str, Any]) -> Any:
    """The receipt as the JSONField binds it. On SQLite that is ``json.dumps`` text; for
    the journal's receipt — printable ASCII strings without quotes or backslashes
    (operation ids, keys and digests are validated so) — the same bytes come from one
    format string; anything else takes the field's own encoding."""
    if db.vendor == "sqlite" and tuple(receipt) == _RECEIPT_KEYS:
        before = receipt["supersedes_operation_id"]
        values = (receipt["operation_id"], receipt["intent_hash"], receipt["key"], receipt["state"])
        plain = "".join(values) if before is None else "".join(values) + before
        if plain.isascii() and plain.isprintable() and '"' not in plain and "\\" not in plain:
            return _RECEIPT_TEXT % (*values, "null" if before is None else f'"{before}"')
    return _RECEIPT_FIELD.get_db_prep_save(receipt, db)


# -- the cursors ---------------------------------------------------------------------------
class _NativeCursor:
    """The DB-API cursor taking Django's ``%s`` placeholders (rewritten once per
    statement text and remembered)."""

    __slots__ = ("_cursor", "db")

    def __init__(self, db, cursor):
        self.db, self._cursor = db, cursor

    def execute(self, sql: str, params: tuple = ()):
        return self._cursor.execute(_native(self.db, sql), params)

    def fetchone(self):
        return self._cursor.fetchone()

    def fetchall(self):
        return self._cursor.fetchall()

    @property
    def rowcount(self) -> int:
        return self._cursor.rowcount


class statement_cursor:
    """A cursor for the journal's hot statements.

    While queries are being logged (``DEBUG``, tests, ``CaptureQueriesContext``) or an
    execute wrapper is installed (instrumentation), this is Django's cursor, so every
    statement is counted, captured and wrapped; otherwise the DB-API cursor itself,
    skipping the wrapper's per-call placeholder rewriting and timing — errors still
    surface as Django's ``DatabaseError``/``IntegrityError``.
    """

    __slots__ = ("_cursor", "_db", "_errors")

    def __enter__(self):
        db = self._db = connections[DEFAULT_DB_ALIAS]
        if db.queries_logged or db.execute_wrappers:
            self._errors = None
            self._cursor = db.cursor()
            return self._cursor.__enter__()
        db.ensure_connection()
        self._errors = db.wrap_database_errors
        self._cursor = db.connection.cursor()
        return _NativeCursor(db, self._cursor)

    def __exit__(self, exc_type, exc, tb):
        if self._errors is None:
            return self._cursor.__exit__(exc_type, exc, tb)
        self._cursor.close()
        # Re-raise a driver error as Django's (IntegrityError, OperationalError, …).
        return self._errors.__exit__(exc_type, exc, tb)


#: The BEGIN of Django's SQLite transactions, by the connection's ``transaction_mode``.
_BEGIN = {None: "BEGIN"}
_CURSORS = threading.local()


class write_transaction:
    """A write's transaction; ``cursor`` runs its statements (``snapshot_rows``, ``commit``).

    On SQLite in autocommit — no atomic block open, queries not being logged and no
    execute wrapper installed — this is the DB-API connection's own ``BEGIN IMMEDIATE``
    (Django's ``transaction_mode``) … ``COMMIT`` on a cursor kept per connection, with
    ``ROLLBACK`` on any exception: the very transaction ``transaction.atomic()`` opens,
    without its bookkeeping. The body must not open an atomic block (SQLite refuses a
    nested ``BEGIN``); ORM queries run inside it. Everywhere else — PostgreSQL, inside a
    caller's transaction (a savepoint), under instrumentation — it is
    ``transaction.atomic()`` with ``statement_cursor``. Driver errors surface as
    Django's ``DatabaseError``/``IntegrityError`` either way.
    """

    __slots__ = ("_db", "_raw", "_stack", "cursor")

    def __enter__(self) -> "write_transaction":
        db = self._db = connections[DEFAULT_DB_ALIAS]
        if db.connection is None:
            db.ensure_connection()
        if (
            db.vendor == "sqlite"
            and db.autocommit
            and not db.in_atomic_block
            and not db.execute_wrappers
            and not db.queries_logged
            and not db.connection.in_transaction
        ):
            raw = self._raw = db.connection
            pair = getattr(_CURSORS, "pair", None)
            if pair is None or pair[0] is not raw:
                pair = _CURSORS.pair = (raw, _NativeCursor(db, raw.cursor()))
            self.cursor = pair[1]
            begin = _BEGIN.get(db.transaction_mode)
            if begin is None:
                begin = _BEGIN[db.transaction_mode] = f"BEGIN {db.transaction_mode}"
            with db.wrap_database_errors:
                pair[1]._cursor.execute(begin)
            return self
        self._raw = None
        with contextlib.ExitStack() as stack:
            stack.enter_context(transaction.atomic(using=db.alias))
            self.cursor = stack.enter_context(statement_cursor())
            self._stack = stack.pop_all()
        return self

    def __exit__(self, exc_type, exc, tb):
        raw = self._raw
        if raw is None:
            return self._stack.__exit__(exc_type, exc, tb)
        db = self._db
        if exc_type is None:
            try:
                with db.wrap_database_errors:
                    # A statement (prepared once, cached) rather than ``raw.commit()``,
                    # which prepares its COMMIT on every call.
                    self.cursor._cursor.execute("COMMIT")
                return False
            except BaseException:
                _rollback(db, raw)
                raise
        _rollback(db, raw)
        # Re-raise a driver error as Django's (IntegrityError, OperationalError, …).
        return db.wrap_database_errors.__exit__(exc_type, exc, tb)


def _rollback(db, raw) -> None:
    try:
        raw.rollback()
    except Exception:  # as transaction.atomic: a failed rollback drops the connection
        db.close()


def _fetch_all(sql: str, params: tuple) -> list[tuple]:
    with statement_cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


_NATIVE: dict[str, str] = {}


def _native(db, sql: str) -> str:
    """``sql`` in the driver's own placeholder style (SQLite: ``?``)."""
    if db.vendor != "sqlite":
        return sql
    native = _NATIVE.get(sql)
    if native is None:
        native = _NATIVE[sql] = sql.replace("%s", "?")
    return native
