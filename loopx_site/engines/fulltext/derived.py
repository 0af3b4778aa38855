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
- Ranking from the copy is exact like the snapshot path (MaxScore, ``_rank``): a free
  floor of the k-th best score (the lists' k-th best contributions), the lists that
  cannot lift a document to it on their own set aside, the rest added into slot
  accumulators, and the documents that can still reach the floor scored exactly; the
  scores are added in query order, as the reference does.
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
_SEEDS = 64  # each list's largest contributions kept apart: a floor of the k-th best
# costs, measured: a document looked up in one list (binary search), a posting added
# into the slot accumulators and taken out again, one slot scanned (the unit)
_LOOKUP_COST = 200
_DENSE_COST = 30


class _Copy:
    """What this process holds of one namespace at one revision."""

    def __init__(self, ns_id: int, revision: int, documents: int, total: int, size: int):
        self.ns_id, self.revision, self.documents, self.size = ns_id, revision, documents, size
        self.avgdl = total / documents
        self.terms: dict[str, _List | None] = {}  # None: no document holds it
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
    ranked = sorted(zip(scores.tolist(), refs.values(), strict=True), key=_best_first)
    return [engine.Hit(ref=ref, score=score) for score, ref in ranked[:limit]]


def _best_first(pair: tuple[float, str]) -> tuple[float, str]:
    return -pair[0], pair[1]


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
    try:
        return conn.connection.execute(qmark, params).fetchall()
    except Exception:
        with conn.wrap_database_errors:  # (Django's exceptions, only when one is raised)
            raise


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


class _List:
    """One term's posting list as the copy holds it: slots ascending, each posting's
    contribution ``idf · w(tf, dl)`` (the reference's arithmetic, ``engine``), the
    largest contribution with slack (``bound``) and the ``_SEEDS`` largest
    contributions, largest first (``tops``)."""

    __slots__ = (
        "bound",
        "contribution",
        "contribution_padded",
        "padded",
        "size",
        "slots",
        "tops",
        "word",
    )

    def __init__(self, word: str, slots, contribution):
        import numpy as np

        self.size = int(slots.size)
        # one slot past every real one ends the lists: a lookup never runs off the end
        self.padded = np.append(slots, np.intp(-1 & np.iinfo(np.intp).max))
        self.contribution_padded = np.append(contribution, 0.0)
        self.word = word
        self.slots, self.contribution = self.padded[:-1], self.contribution_padded[:-1]
        n = min(_SEEDS, self.size)
        best = np.argpartition(-contribution, n - 1)[:n] if self.size > n else np.arange(n)
        best = best[np.argsort(-contribution[best], kind="stable")]
        self.tops = contribution[best]
        self.bound = float(self.tops[0]) * (1.0 + engine._EPS) + engine._TINY


def _term(copy: _Copy, word: str, parts: list) -> _List:
    postings = engine._postings(sorted(parts, key=engine._bucket))
    term = engine._Term(word, int(postings.slots.size), 1, 1, copy.documents, copy.avgdl)
    engine._decode_postings(term, postings, copy.avgdl)
    listed = _List(word, postings.slots, term.contribution)  # (tf and dl are not kept)
    copy.bytes += _size(listed)
    return listed


def _size(term: _List) -> int:
    return term.padded.nbytes + term.contribution_padded.nbytes + 8 * _SEEDS + 200


def _rank(copy: _Copy, words: list[str], limit: int):
    """Slots and exact scores of the top ``limit`` (and every tie with the last).

    1. A floor of the k-th best score (``_floor``): the largest of the lists' k-th best
       contributions.
    2. The lists whose bounds add up to less than that floor (the smallest bounds
       first) cannot lift a document into the top-k on their own: every document that
       can is in one of the other lists, the *essential* ones (MaxScore).
    3. The essential lists are added into slot accumulators; the documents whose sum
       there plus the other lists' bounds reaches the floor are scored exactly by
       looking them up in every list — or, when they are many, every list is added
       into the accumulators. Either way the scores are added in query order, as the
       reference does."""
    import numpy as np

    present = [copy.terms[w] for w in words]
    present = [t for t in present if t is not None]  # query order
    if not present:
        return np.zeros(0, np.intp), np.zeros(0)
    if len(present) == 1:
        (term,) = present
        if limit < term.size and limit <= term.tops.size:  # the k-th best is known
            kept = np.flatnonzero(term.contribution >= term.tops[limit - 1])
            return term.slots[kept], term.contribution[kept]
        return engine._cut(term.slots, term.contribution, limit)
    floor = _floor(present, limit)
    rest, essential = 0.0, sorted(present, key=lambda t: (t.bound, t.word))
    while essential and rest + essential[0].bound < floor:
        rest += essential.pop(0).bound
    others = sum(t.size for t in present) - sum(t.size for t in essential)
    if others * _DENSE_COST > copy.size:  # (else adding them all costs no more)
        slots = _reaching(essential, copy.size, floor - rest)
        if slots.size * len(present) * _LOOKUP_COST <= others * _DENSE_COST:
            scores = _scores(present, slots)
            kept = np.flatnonzero(scores >= floor)
            return engine._cut(slots[kept], scores[kept], limit)
    return _dense(present, copy.size, limit, floor)


def _reaching(essential: list[_List], size: int, least: float):
    """The slots whose sum over ``essential`` reaches ``least`` (a bound: the order of
    the additions does not matter here)."""
    import numpy as np

    scores, _ = engine._scratch.arrays(size)
    try:
        for term in essential:
            scores[term.slots] += term.contribution
        return np.flatnonzero(scores[:size] >= least)
    finally:
        for term in essential:
            scores[term.slots] = 0.0


def _floor(present: list[_List], limit: int) -> float:
    """A score the real k-th best reaches, with slack (0 when none is known): a
    document scores at least its contribution in any one list (adding positive numbers
    never rounds below an addend), so the k-th best is at least any list's k-th best
    contribution (kept for the first ``_SEEDS``, else found by partitioning)."""
    import numpy as np

    best = 0.0
    for term in present:
        if term.size < limit:
            continue
        if limit <= term.tops.size:
            kth = term.tops[limit - 1]
        else:
            kth = np.partition(term.contribution, term.size - limit)[term.size - limit]
        best = max(best, float(kth))
    return best * (1.0 - engine._EPS)


def _union(lists):
    """The distinct slots of ascending ``lists``, ascending."""
    import numpy as np

    slots = np.concatenate(lists)
    slots.sort()
    keep = np.empty(slots.size, dtype=bool)
    keep[:1] = True
    np.not_equal(slots[1:], slots[:-1], out=keep[1:])
    return slots[keep]


def _scores(present: list[_List], candidates):
    """Exact scores of ``candidates`` (ascending, distinct), added in query order (0
    where a document lacks a term: adding 0 changes no sum)."""
    import numpy as np

    total = np.zeros(candidates.size, dtype=np.float64)
    for term in present:
        listed = term.slots
        if listed is candidates:  # (the one list the candidates are)
            total += term.contribution
            continue
        at = np.searchsorted(term.padded, candidates)  # (the sentinel ends every search)
        total += np.where(term.padded[at] == candidates, term.contribution_padded[at], 0.0)
    return total


def _dense(present: list[_List], size: int, limit: int, floor: float):
    """Every posting scored into the slot accumulators, in query order; the documents
    at or above ``floor`` cut to the top ``limit``."""
    import numpy as np

    scores, _ = engine._scratch.arrays(size)
    try:
        for term in present:
            scores[term.slots] += term.contribution  # (a term's slots are distinct)
        window = scores[:size]
        matched = np.flatnonzero(window >= floor) if floor > 0.0 else np.flatnonzero(window)
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
