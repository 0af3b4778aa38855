"""A process's derived copy of a namespace's posting lists, valid for one revision.

The database stays the only source of truth; this is a copy of what it held at one
revision, read from it and used only while the database still holds that revision:

- Every write to a namespace sets its row's ``revision`` to a fresh random 63-bit number
  (``engine.new_revision``) in the write's transaction. A revision therefore names one
  committed state of the namespace: the same revision read twice means the same rows.
- A search first reads the namespace's row (statistics and revision) in one statement.
  If this process holds a copy made at that revision, it ranks from the copy; a copy of
  another revision is dropped. Terms the copy lacks are read with the revision in the
  same statement (``_BLOCKS_AT_SQL``), and so are the refs of the winners it has not
  seen; a revision that moved in between sends the search to the snapshot path
  (``engine``), which reads everything itself. So every answer is the answer of one
  committed state — the state the database holds at the search's first read — and
  several processes, each with its own copy, answer alike.
- The copy is filled lazily (a term's whole posting list once per revision, the refs of
  documents once returned) and bounded by ``LOOPX_FULLTEXT_CACHE_MB`` (Django setting,
  default 256; 0 turns it off) over all the process's copies: past it the other
  namespaces' copies are dropped, then this one starts over.
- Ranking from the copy is exact like the snapshot path: the candidates are the
  documents of the rarest lists, scored exactly by looking them up in every list, until
  the terms left could not lift a document outside them to the k-th best (``_rank``);
  the scores are added in query order, as the reference does.
"""

import threading

from django.conf import settings
from django.core.signals import setting_changed
from django.db import DEFAULT_DB_ALIAS, connections
from django.dispatch import receiver

from loopx_site.engines.fulltext import engine

_NAMESPACE_SQL = (
    "SELECT id, documents, tokens, next_slot, revision FROM core_searchnamespace WHERE name = %s"
)
_BLOCKS_AT_SQL = (  # the namespace's row and some terms' blocks in one statement: one snapshot
    "SELECT n.id, n.documents, n.tokens, n.next_slot, n.revision, b.term, b.bucket, b.count, "
    "b.data FROM core_searchnamespace n "
    "LEFT JOIN core_searchpostingblock b ON b.namespace_id = n.id AND b.term IN (?) "
    "WHERE n.name = %s"
)
_REFS_AT_SQL = (  # some documents' refs and the revision they belong to: one snapshot
    "SELECT n.revision, d.slot, d.ref FROM core_searchnamespace n "
    "LEFT JOIN core_searchdocument d ON d.namespace = n.name AND d.slot IN (?) "
    "WHERE n.name = %s"
)
_REFS_FROM_SQL = (  # the refs of every slot from one on, with the revision: one snapshot
    "SELECT n.revision, d.slot, d.ref FROM core_searchnamespace n "
    "LEFT JOIN core_searchdocument d ON d.namespace = n.name AND d.slot >= %s "
    "WHERE n.name = %s"
)
_ALL_REFS = 50_000  # a namespace this small has its refs read whole, from the last slot read on
_DENSE_SHARE = 4  # score every posting once the candidates pass a quarter of them


class _Copy:
    """What this process holds of one namespace at one revision."""

    def __init__(self, ns_id: int, revision: int, documents: int, total: int, size: int):
        self.ns_id, self.revision, self.documents, self.size = ns_id, revision, documents, size
        self.avgdl = total / documents
        self.terms: dict[str, engine._Term | None] = {}  # None: no document holds it
        # slot → ref. A committed document keeps its slot and ref until removed, and a
        # removed slot is never reused, so refs read outside any transaction hold for
        # every revision of the same namespace row (``committed``) and are carried over.
        self.refs: dict[int, str] = {}
        self.refs_from = 0  # every ref below this slot is in ``refs`` (small namespaces)
        self.committed = True
        self.bytes = 0


_copies: dict[tuple, _Copy] = {}
_lock = threading.Lock()


def budget() -> int:
    """Bytes one process may hold for all its copies."""
    global _budget
    if _budget is None:
        _budget = int(getattr(settings, "LOOPX_FULLTEXT_CACHE_MB", 256)) << 20
    return _budget


_budget = None


@receiver(setting_changed)
def _forget_budget(*, setting, **kwargs) -> None:
    global _budget
    if setting == "LOOPX_FULLTEXT_CACHE_MB":
        _budget = None


def clear() -> None:
    """Drop every copy (tests; never needed for correctness)."""
    with _lock:
        _copies.clear()


def search(namespace: str, words: list[str], limit: int) -> list[engine.Hit] | None:
    """The exact top-``limit`` from this process's copy, or ``None`` when the snapshot
    path must answer (no copy possible, or the namespace changed during the search)."""
    if budget() <= 0:
        return None
    conn = connections[DEFAULT_DB_ALIAS]  # (the proxy costs a lookup per attribute)
    key = (conn.alias, conn.settings_dict.get("NAME"), namespace)
    copy = _copies.get(key)
    asked = words if copy is None else [w for w in words if w not in copy.terms]
    rows = _blocks(conn, namespace, asked)  # (the namespace's row alone when nothing is asked)
    if not rows or not rows[0][1]:
        return []
    ns_id, documents, total, size, revision = rows[0][:5]
    if not revision:  # not written since the revision was introduced
        return None
    if copy is None or copy.revision != revision:
        copy = _renew(conn, key, copy, ns_id, revision, documents, total, size)
    _add(copy, asked, rows)
    rest = [w for w in words if w not in copy.terms]  # known to a copy now retired
    if rest:
        rows = _blocks(conn, namespace, rest)
        if not rows or rows[0][4] != revision:
            return None
        _add(copy, rest, rows)
    slots, scores = _rank(copy, words, limit)
    refs = _refs(conn, copy, namespace, slots.tolist())
    if refs is None:
        return None
    hits = [engine.Hit(ref=refs[s], score=v) for s, v in zip(refs, scores.tolist(), strict=True)]
    hits.sort(key=lambda h: (-h.score, h.ref))
    return hits[:limit]


_QMARK: dict[str, str] = {}


def _read(conn, sql: str, params: list) -> list[tuple]:
    """Rows of one statement, straight from the driver (the copy's reads are few and
    small: Django's cursor wrapping was most of their cost)."""
    if conn.vendor == "postgresql":
        return engine._fetch(sql, params)
    if conn.connection is None:
        conn.ensure_connection()
    qmark = _QMARK.get(sql)
    if qmark is None:
        qmark = _QMARK[sql] = sql.replace("%s", "?") if len(_QMARK) < 4096 else sql
    with conn.wrap_database_errors:
        return conn.connection.execute(qmark, params).fetchall()


def _listed(conn, sql: str, values: list) -> tuple[str, list]:
    """``engine._in_list`` for ``conn``."""
    if conn.vendor == "postgresql":
        return sql.replace("IN (?)", "= ANY(%s)"), [list(values)]
    return sql.replace("(?)", "(" + ",".join(["%s"] * len(values)) + ")"), list(values)


def _in_transaction(conn) -> bool:
    """Whether reads now may see writes not committed (the caller's own)."""
    if conn.in_atomic_block:
        return True
    return conn.vendor == "sqlite" and conn.connection.in_transaction


def _blocks(conn, namespace: str, words: list[str]) -> list[tuple]:
    if not words:
        return _read(conn, _NAMESPACE_SQL, [namespace])
    sql, listed = _listed(conn, _BLOCKS_AT_SQL, words)
    return _read(conn, sql, [*listed, namespace])


def _renew(conn, key, old, ns_id, revision, documents, total, size) -> _Copy:
    copy = _Copy(ns_id, revision, documents, total, size)
    if old is not None and old.ns_id == ns_id and old.committed and not _in_transaction(conn):
        copy.refs, copy.refs_from = old.refs, old.refs_from
    with _lock:
        if len(_copies) > 1024:
            _copies.clear()
        _copies[key] = copy
    return copy


def _add(copy: _Copy, words: list[str], rows: list[tuple]) -> None:
    """``words``' lists from ``rows`` (``_BLOCKS_AT_SQL``, read at ``copy``'s revision)."""
    if not words:
        return
    blocks: dict[str, list] = {w: [] for w in words}
    for *_, word, bucket, count, data in rows:
        if word is not None:
            blocks[word].append((bucket, count, data))
    for word, parts in blocks.items():
        copy.terms[word] = _term(copy, word, parts) if parts else None
    if sum(c.bytes for c in list(_copies.values())) > budget():  # the others go first
        with _lock:
            for key in [k for k, c in _copies.items() if c is not copy]:
                del _copies[key]
    if copy.bytes > budget():  # then this one starts over with what this search needs
        kept = {w: t for w, t in copy.terms.items() if w in blocks}
        copy.terms, copy.refs, copy.refs_from = kept, {}, 0
        copy.bytes = sum(_size(t) for t in kept.values() if t is not None)


def _term(copy: _Copy, word: str, parts: list) -> engine._Term:
    postings = engine._postings(sorted(parts, key=engine._bucket))
    term = engine._Term(
        word,
        int(postings.slots.size),
        int(postings.tf.max()),
        int(postings.dl.min()),
        copy.documents,
        copy.avgdl,
    )
    engine._decode_postings(term, postings, copy.avgdl)
    term.cells = None  # (kept small: the copy holds slots, tf, dl and contributions)
    copy.bytes += _size(term)
    return term


def _size(term: engine._Term) -> int:
    return sum(a.nbytes for a in (term.slots, term.tf, term.dl, term.contribution))


def _rank(copy: _Copy, words: list[str], limit: int):
    """Slots and exact scores of the top ``limit`` (and every tie with the last).

    The lists are taken rarest first. The documents of each list not seen before are
    scored exactly (looked up in every list) unless their bound — their contribution
    here plus every later term's bound — is below the k-th best exact score so far
    (``kth`` only rises, so such a document never enters). A document in none of the
    lists taken scores at most the later terms' bounds: once that is below ``kth``,
    the top-k is among the documents scored."""
    import numpy as np

    present = [copy.terms[w] for w in words if copy.terms[w] is not None]  # query order
    if not present:
        return np.zeros(0, np.intp), np.zeros(0)
    if len(present) == 1:
        return engine._cut(present[0].slots, present[0].contribution, limit)
    rarest = sorted(present, key=lambda t: (t.slots.size, t.word))
    postings = sum(t.slots.size for t in present)
    seen = np.zeros(0, np.intp)
    scored, scores, kth = [], [], 0.0
    for i, term in enumerate(rarest):
        rest = sum(t.bound for t in rarest[i + 1 :])  # the most the later terms add
        fresh = ~_member(term.slots, seen) if seen.size else slice(None)
        new = term.slots[fresh] if seen.size else term.slots
        if i and (seen.size + new.size) * _DENSE_SHARE > postings:
            return _dense(present, copy.size, limit)
        if kth > 0.0:
            upper = (term.contribution[fresh] + rest) * (1.0 + engine._EPS) + engine._TINY
            alive = new[upper >= kth]
        else:
            alive = new
        scored.append(alive)
        scores.append(_scores(present, alive))
        seen = _union([seen, new]) if seen.size else new
        if sum(a.size for a in scored) >= limit:
            kth = float(np.partition(np.concatenate(scores), -limit)[-limit])
            if rest < kth * (1.0 - engine._EPS):  # no document unseen reaches it, nor ties
                break
    return engine._cut(np.concatenate(scored), np.concatenate(scores), limit)


def _member(slots, within):
    """Whether each of ``slots`` is in ``within`` (ascending, not empty)."""
    import numpy as np

    at = np.searchsorted(within, slots)
    np.minimum(at, within.size - 1, out=at)
    return within[at] == slots


def _union(lists):
    """The distinct slots of ascending ``lists``, ascending."""
    import numpy as np

    if len(lists) == 1:
        return lists[0]
    slots = np.concatenate(lists)
    slots.sort()
    keep = np.empty(slots.size, dtype=bool)
    keep[:1] = True
    np.not_equal(slots[1:], slots[:-1], out=keep[1:])
    return slots[keep]


def _scores(present: list[engine._Term], candidates):
    """Exact scores of ``candidates`` (ascending, distinct), added in query order (0
    where a document lacks a term: adding 0 changes no sum)."""
    import numpy as np

    total = np.zeros(candidates.size, dtype=np.float64)
    for term in present:
        listed = term.slots
        if listed is candidates:  # (the one list the candidates are)
            total += term.contribution
            continue
        if not candidates.size:
            continue
        at = np.searchsorted(listed, candidates)
        np.minimum(at, listed.size - 1, out=at)
        total += np.where(listed[at] == candidates, term.contribution[at], 0.0)
    return total


def _dense(present: list[engine._Term], size: int, limit: int):
    """Every posting scored into the slot accumulators, in query order."""
    import numpy as np

    scores, _ = engine._scratch.arrays(size)
    try:
        for term in present:
            scores[term.slots] += term.contribution  # (a term's slots are distinct)
        matched = np.flatnonzero(scores[:size])
        return engine._cut(matched, scores[matched], limit)
    finally:
        for term in present:
            scores[term.slots] = 0.0


def _refs(conn, copy: _Copy, namespace: str, slots: list[int]) -> dict[int, str] | None:
    """The refs of ``slots``, in their order; ``None`` if the namespace moved on."""
    unknown = [s for s in slots if s not in copy.refs]
    if unknown:
        if copy.documents <= _ALL_REFS:  # the slots not read yet, all at once
            rows = _read(conn, _REFS_FROM_SQL, [copy.refs_from, namespace])
        else:
            sql, listed = _listed(conn, _REFS_AT_SQL, unknown)
            rows = _read(conn, sql, [*listed, namespace])
        if not rows or rows[0][0] != copy.revision:
            return None
        if copy.committed and _in_transaction(conn):
            copy.committed = False
        copy.refs.update((slot, ref) for _, slot, ref in rows if slot is not None)
        copy.bytes += 100 * len(rows)
        if copy.documents <= _ALL_REFS:
            copy.refs_from = copy.size
    return {s: copy.refs[s] for s in slots}
