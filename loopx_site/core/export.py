"""Export and import of one Goal's memory as a JSONL stream (docs/export.md).

The kernel knows no app: each app that owns part of a Goal's memory registers, on
``contributions.GOAL_EXPORT``, a callable ``sections(goal) -> [Section, ...]`` naming its
rows for that Goal. A ``Section`` is one line ``type``: a model, the queryset of the
Goal's rows, the row's *natural key* (the fields that name it in any instance — never a
database id) and, for each foreign key it carries, the natural key of the row it points
to. Everything else (encoding, ordering, chunked reads, chunked writes, conflict checks)
is done here once, so every section behaves alike.

Stream: a ``header`` line (format, version, Goal), then each section's rows in
registration order (each section ordered by its natural key), then a ``trailer`` line
with the per-type counts. Every line is canonical JSON (sorted keys, no spaces, UTF-8)
followed by ``\\n``; no line carries a database id or the time of the export, so two
exports of the same state are the same bytes, on any instance and either database.

Import is conditional and idempotent: a row whose natural key is absent is created, a
row present with the same content is left alone, and a row present with other content
refuses the whole import (``import_conflict``, nothing written). Reads and writes go by
chunks of ``CHUNK`` rows, so memory stays flat whatever the Goal's size.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from django.db import models, transaction
from django.db.models import Q

from loopx_site.core import contributions
from loopx_site.core.errors import DomainError

FORMAT = "loopx-memory-export"
VERSION = 1
CHUNK = 1000


@dataclass(frozen=True)
class Ref:
    """A foreign key carried by its target's natural key: ``paths`` are lookups on the
    target model (``("goal__goal_id", "agent_id")``); one path is written as a value,
    several as a list."""

    model: type[models.Model]
    paths: tuple[str, ...]


@dataclass(frozen=True)
class Section:
    """One line ``type`` of the stream (see the module docstring)."""

    type: str
    model: type[models.Model]
    rows: Callable[[], models.QuerySet]
    natural: tuple[str, ...]
    refs: dict[str, Ref] = field(default_factory=dict)
    exclude: tuple[str, ...] = ()

    @property
    def fields(self) -> list[str]:
        """The plain (non-relation) columns carried, in declaration order."""
        return [
            f.name
            for f in self.model._meta.concrete_fields
            if not f.primary_key and not f.is_relation and f.name not in self.exclude
        ]

    def natural_lookups(self) -> list[str]:
        lookups: list[str] = []
        for name in self.natural:
            ref = self.refs.get(name)
            lookups.extend([f"{name}__{p}" for p in ref.paths] if ref else [name])
        return lookups


# -- encoding ------------------------------------------------------------------------------


def encode_value(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")
    if isinstance(value, dt.date):
        return value.isoformat()
    return value


def line(payload: dict[str, Any]) -> bytes:
    """One line of the stream: canonical JSON and ``\\n``."""
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return (text + "\n").encode("utf-8")


def _value_columns(section: Section) -> list[str]:
    columns = list(section.fields)
    for name, ref in section.refs.items():
        columns.extend(f"{name}__{p}" for p in ref.paths)
    return columns


def _encode_row(section: Section, values: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"type": section.type}
    for name in section.fields:
        out[name] = encode_value(values[name])
    for name, ref in section.refs.items():
        parts = [encode_value(values[f"{name}__{p}"]) for p in ref.paths]
        if all(p is None for p in parts):
            out[name] = None
        else:
            out[name] = parts[0] if len(parts) == 1 else parts
    return out


def _ordered(section: Section, queryset: models.QuerySet) -> models.QuerySet:
    return queryset.order_by(*section.natural_lookups())


def encoded_rows(section: Section, queryset: models.QuerySet | None = None) -> Iterator[dict]:
    """The section's rows as line payloads, read ``CHUNK`` at a time."""
    queryset = section.rows() if queryset is None else queryset
    values = _ordered(section, queryset).values(*_value_columns(section))
    for row in values.iterator(chunk_size=CHUNK):
        yield _encode_row(section, row)


# -- export ---------------------------------------------------------------------------------


def sections_for(goal) -> list[Section]:
    """Every registered app's sections for ``goal``, in registration order."""
    found: list[Section] = []
    for _key, contributor in contributions.GOAL_EXPORT:
        found.extend(contributor(goal))
    return found


def resolve_goal(goal_id: str):
    from loopx_site.core.models import Goal

    goal = Goal.objects.filter(goal_id=goal_id).first()
    if goal is None:
        raise DomainError("goal_not_registered", f"no Goal {goal_id!r}", field="goal_id")
    return goal


def header(goal_id: str, types: list[str]) -> dict[str, Any]:
    return {"type": "header", "format": FORMAT, "version": VERSION, "goal_id": goal_id,
            "types": types}  # fmt: skip


def stream(goal_id: str) -> Iterator[bytes]:
    """The export of ``goal_id``, line by line (bytes). Raises ``goal_not_registered``
    before the first line when the Goal is unknown."""
    goal = resolve_goal(goal_id)
    sections = sections_for(goal)
    return _lines(goal_id, sections)


def _lines(goal_id: str, sections: list[Section]) -> Iterator[bytes]:
    counts: dict[str, int] = {}
    yield line(header(goal_id, [s.type for s in sections]))
    for section in sections:
        counts[section.type] = 0
        for payload in encoded_rows(section):
            counts[section.type] += 1
            yield line(payload)
    yield line({"type": "trailer", "goal_id": goal_id, "counts": counts})


def write(goal_id: str, out: IO[bytes]) -> dict[str, Any]:
    """Write the export to ``out``; the summary (lines, bytes, sha256, per-type counts)."""
    import hashlib

    digest, size, lines, last = hashlib.sha256(), 0, 0, b""
    for chunk in stream(goal_id):
        out.write(chunk)
        digest.update(chunk)
        size, lines, last = size + len(chunk), lines + 1, chunk
    return {"status": "exported", "goal_id": goal_id, "format": FORMAT, "version": VERSION,
            "lines": lines, "bytes": size, "sha256": "sha256:" + digest.hexdigest(),
            "counts": json.loads(last)["counts"]}  # fmt: skip


# -- import ---------------------------------------------------------------------------------


def _bad(message: str, **details: Any) -> DomainError:
    return DomainError("invalid_export", message, field="input", details=details or None)


def parse_lines(source: Iterable[bytes | str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, payload)`` for each line of ``source``; a malformed line is
    ``invalid_export`` naming its number."""
    for number, raw in enumerate(source, start=1):
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        if not text.strip():
            continue
        try:
            payload = json.loads(text)
        except ValueError:
            raise _bad(f"line {number} is not JSON", line=number) from None
        if not isinstance(payload, dict) or not isinstance(payload.get("type"), str):
            raise _bad(f"line {number} has no `type`", line=number)
        yield number, payload


@dataclass
class _Tally:
    created: dict[str, int] = field(default_factory=dict)
    unchanged: dict[str, int] = field(default_factory=dict)
    seen: dict[str, int] = field(default_factory=dict)

    def add(self, kind: str, type_: str, count: int) -> None:
        table = getattr(self, kind)
        table[type_] = table.get(type_, 0) + count


def _flat(ref: Ref | None, value: Any) -> tuple:
    if ref is not None and len(ref.paths) > 1:
        return tuple(value)
    return (value,)


def _natural_value(section: Section, payload: dict[str, Any]) -> tuple:
    key: tuple = ()
    for name in section.natural:
        key += _flat(section.refs.get(name), payload[name])
    return key


def _any_of(lookups: list[str], keys: Iterable[tuple]) -> Q:
    """Rows whose ``lookups`` take one of ``keys``, as one ``__in`` per lookup (a superset
    the callers narrow by exact key: a chunk's OR of ANDs would be too deep for SQLite)."""
    keys = list(keys)
    return Q(**{f"{name}__in": sorted({key[i] for key in keys}, key=str)
                for i, name in enumerate(lookups)})  # fmt: skip


def _resolve_ref(ref: Ref, values: list[Any]) -> dict[tuple, int]:
    """``{natural key: pk}`` of the ref's targets named in ``values`` (one query)."""
    keys = {_flat(ref, v) for v in values if v is not None}
    if not keys:
        return {}
    rows = ref.model.objects.filter(_any_of(list(ref.paths), keys)).values_list("pk", *ref.paths)
    return {tuple(encode_value(v) for v in row[1:]): row[0] for row in rows}


def _existing(section: Section, batch: list[tuple[int, dict]]) -> dict[tuple, dict]:
    keys = {_natural_value(section, payload) for _, payload in batch}
    queryset = section.model.objects.filter(_any_of(section.natural_lookups(), keys))
    return {_natural_value(section, row): row for row in encoded_rows(section, queryset)}


#: What a stream value of each kind of column must be (JSON columns take any value).
_KINDS: tuple[tuple[type[models.Field], type | tuple[type, ...]], ...] = (
    (models.DateTimeField, str),
    (models.BooleanField, bool),
    (models.IntegerField, int),
    (models.CharField, str),
    (models.TextField, str),
)


def _decode(model: type[models.Model], name: str, value: Any, number: int) -> Any:
    """The column value of a stream value; a value of the wrong kind (a damaged or
    edited stream) is ``invalid_export`` naming the line and field, never a traceback."""
    column = model._meta.get_field(name)
    if value is None:
        return None
    for field_type, kind in _KINDS:
        if isinstance(column, field_type):
            wrong = not isinstance(value, kind) or (kind is int and isinstance(value, bool))
            if wrong:
                raise _bad(f"line {number}: `{name}` has a value of the wrong kind",
                           line=number, field=name)  # fmt: skip
            break
    if isinstance(column, models.DateTimeField):
        try:
            return dt.datetime.fromisoformat(value)
        except ValueError:
            raise _bad(f"line {number}: `{name}` is not a timestamp", line=number,
                       field=name) from None  # fmt: skip
    return value


def _check_shape(section: Section, number: int, payload: dict[str, Any]) -> None:
    expected = {"type", *section.fields, *section.refs}
    if set(payload) != expected:
        odd = sorted(set(payload) ^ expected)
        raise _bad(f"line {number}: unexpected or missing fields {odd}", line=number, fields=odd)


def _conflict(section: Section, number: int, payload: dict, have: dict) -> DomainError:
    differ = sorted(k for k in payload if payload[k] != have.get(k))
    return DomainError(
        "import_conflict",
        f"line {number}: this instance holds a {section.type} with the same key and other "
        "content; nothing was imported",
        details={"line": number, "type": section.type,
                 "key": list(_natural_value(section, payload)), "fields": differ},
    )  # fmt: skip


def _unresolved(section: Section, payload: dict, ids: dict[str, dict]) -> list[str]:
    return [
        name
        for name, ref in section.refs.items()
        if payload[name] is not None and _flat(ref, payload[name]) not in ids[name]
    ]


def _instance(section: Section, number: int, payload: dict, ids: dict[str, dict]) -> models.Model:
    kwargs = {n: _decode(section.model, n, payload[n], number) for n in section.fields}
    for name, ref in section.refs.items():
        value = payload[name]
        kwargs[f"{name}_id"] = None if value is None else ids[name][_flat(ref, value)]
    return section.model(**kwargs)


def _flush(section: Section, batch: list[tuple[int, dict]], tally: _Tally) -> list:
    """Write one chunk; returns the rows that wait for a row of their own section."""
    ids = {n: _resolve_ref(r, [p[n] for _, p in batch]) for n, r in section.refs.items()}
    existing = _existing(section, batch)
    fresh, waiting = [], []
    for number, payload in batch:
        have = existing.get(_natural_value(section, payload))
        if have is not None:
            if have != payload:
                raise _conflict(section, number, payload, have)
            tally.add("unchanged", section.type, 1)
            continue
        missing = _unresolved(section, payload, ids)
        if missing and all(section.refs[n].model is section.model for n in missing):
            waiting.append((number, payload))
        elif missing:
            raise _bad(f"line {number}: `{missing[0]}` names a row found neither in the "
                       "stream nor in this instance", line=number, field=missing[0])  # fmt: skip
        else:
            fresh.append(_instance(section, number, payload, ids))
    section.model.objects.bulk_create(fresh, batch_size=CHUNK)
    tally.add("created", section.type, len(fresh))
    return waiting


def _settle_waiting(section: Section, waiting: list, tally: _Tally) -> None:
    """Rows pointing at rows of their own section that came later (a superseded record
    names its successor): written in passes once their target exists."""
    while waiting:
        left: list = []
        for start in range(0, len(waiting), CHUNK):
            left.extend(_flush(section, waiting[start : start + CHUNK], tally))
        if len(left) == len(waiting):
            number = left[0][0]
            raise _bad(f"line {number} names a row of its own type that the stream lacks",
                       line=number)  # fmt: skip
        waiting = left


class _Loader:
    """Feeds parsed lines to their sections, ``CHUNK`` at a time, in stream order."""

    def __init__(self, sections: list[Section]):
        self.sections = {s.type: s for s in sections}
        self.order = [s.type for s in sections]
        self.tally = _Tally()
        self.current: Section | None = None
        self.batch: list[tuple[int, dict]] = []
        self.waiting: list = []

    def feed(self, number: int, payload: dict[str, Any]) -> None:
        section = self.sections.get(payload["type"])
        if section is None:
            raise _bad(f"line {number}: unknown type {payload['type']!r}", line=number)
        if section is not self.current:
            self.finish_section()
            if self.order.index(section.type) < self._position():
                raise _bad(f"line {number}: {section.type} out of order", line=number)
            self.current = section
        _check_shape(section, number, payload)
        self.tally.add("seen", section.type, 1)
        self.batch.append((number, payload))
        if len(self.batch) >= CHUNK:
            self.waiting.extend(_flush(section, self.batch, self.tally))
            self.batch = []

    def _position(self) -> int:
        return -1 if self.current is None else self.order.index(self.current.type)

    def finish_section(self) -> None:
        if self.current is None:
            return
        if self.batch:
            self.waiting.extend(_flush(self.current, self.batch, self.tally))
        _settle_waiting(self.current, self.waiting, self.tally)
        self.batch, self.waiting = [], []


def _read_header(lines: Iterator[tuple[int, dict]]) -> dict[str, Any]:
    first = next(lines, None)
    if first is None or first[1].get("type") != "header":
        raise _bad("the stream does not start with a header line", line=1)
    head = first[1]
    if head.get("format") != FORMAT or not isinstance(head.get("goal_id"), str):
        raise _bad(f"not a {FORMAT} stream", line=1)
    if head.get("version") != VERSION:
        raise _bad(f"version {head.get('version')!r} is not supported (this instance reads "
                   f"version {VERSION})", line=1, version=head.get("version"))  # fmt: skip
    return head


def _load_stream(source: Iterable[bytes | str]) -> dict[str, Any]:
    from loopx_site.core.models import Goal

    lines = parse_lines(source)
    head = _read_header(lines)
    loader = _Loader(sections_for(Goal(goal_id=head["goal_id"])))
    for number, payload in lines:
        if payload["type"] == "trailer":
            loader.finish_section()
            _check_trailer(number, payload, loader.tally, head["goal_id"])
            return {"goal_id": head["goal_id"], "created": loader.tally.created,
                    "unchanged": loader.tally.unchanged}  # fmt: skip
        loader.feed(number, payload)
    raise _bad("the stream ends without its trailer line (truncated?)")


def _check_trailer(number: int, payload: dict, tally: _Tally, goal_id: str) -> None:
    counts = {k: v for k, v in (payload.get("counts") or {}).items() if v}
    if payload.get("goal_id") != goal_id or counts != tally.seen:
        raise _bad(f"line {number}: the trailer's counts do not match the lines read "
                   "(truncated or edited stream)", line=number)  # fmt: skip


def load(source: Iterable[bytes | str], *, execute: bool = False) -> dict[str, Any]:
    """Import a stream in one transaction (a preview rolls back): per-type counts of
    the rows ``created`` and those already here ``unchanged``."""
    with transaction.atomic():
        result = _load_stream(source)
        if not execute:
            transaction.set_rollback(True)
    return {"status": "imported" if execute else "preview", **result}


def registry_sections(goal) -> list[Section]:
    """The kernel's own part: the Goal, its Agents and its host tokens (digests only)."""
    from loopx_site.core.models import Agent, Goal, HostToken

    agent = Ref(Agent, ("goal__goal_id", "agent_id"))
    goal_ref = Ref(Goal, ("goal_id",))
    return [
        Section("goal", Goal, lambda: Goal.objects.filter(goal_id=goal.goal_id), ("goal_id",)),
        Section(
            "agent",
            Agent,
            lambda: Agent.objects.filter(goal__goal_id=goal.goal_id),
            ("goal", "agent_id"),
            refs={"goal": goal_ref},
        ),
        Section(
            "host_token",
            HostToken,
            lambda: HostToken.objects.filter(goal__goal_id=goal.goal_id),
            ("key_digest",),
            refs={"goal": goal_ref, "agent": agent},
        ),
    ]
