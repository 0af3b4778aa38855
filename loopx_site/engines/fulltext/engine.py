"""The shared full-text index: exact BM25 per namespace, the same on SQLite and PostgreSQL.

Documents live in namespaces (e.g. one per corpus); a search never crosses namespaces,
and its statistics (document count, average length, document frequencies) are the
namespace's own. The ranking is defined once, in ``bm25``; ``search`` returns exactly
that ranking's top-k (ties broken by ``ref``) — no token is dropped and no match is left
unranked, whatever the size of the namespace.

Storage (plain tables, the database is the only copy; the tables are ``core``'s models
``SearchNamespace``, ``SearchDocument`` and ``SearchPostingBlock``, created by its
migrations — this module reaches them by name in SQL only, so it imports no app):

- ``SearchNamespace``: N, total length and the next dense slot of each namespace. Every
  write locks this row first (an upsert), so writers of one namespace serialise and the
  statistics always agree with the postings.
- ``SearchDocument``: ref, body, slot and length of each document.
- ``SearchPostingBlock``: per (namespace, term, slot range of ``BUCKET``) one packed
  blob of (slot, tf, dl) postings, slots ascending — 4 bytes a posting (the slot as its
  offset in the bucket) when every tf and dl of the block fits a byte, else 12
  (``_encode``) — with the block's largest tf and smallest dl (its bounds, kept exact by
  every write; a covering index serves them without the blobs). On PostgreSQL a blob is
  stored uncompressed and, up to a page, in its row (migrations 0010, 0011).

A search of a small namespace (under ``_SMALL`` documents at its last search) reads the
namespace row and the query terms' blocks in one statement and scores every match with
vectorised arithmetic (numpy, imported on first search). A larger one (``_Search``)
works inside one snapshot (``_snapshot``): it reads the statistics and each term's df
and bounds, then whole posting lists, highest bound (rarest term) first, until the
unread terms could not, together, lift a document holding none of the read ones to the
k-th best score found so far (``_outside``: a document's tokens shared among the unread
terms, ``_best_sums``). The documents that still can — each bounded by its own length
and the tokens the read terms leave (``_ceilings``; per (tf, dl) cell when one list is
read, ``_Cells``) — are then scored exactly: from their stored bodies, best bound first,
when they are few (``_Exact.best_first``); else by looking each one up in the unread
lists, dropping those that fall below the rising floor on the way (``_probe``). A common
term's long list is decoded only when that is cheaper. Every bound has slack (``_EPS``),
and scores are computed with the reference's operations in its order, so the result is
the reference's top-k exactly, ties with the k-th included.

Callers keep their own lifecycle filters: remove a document when it stops being
recallable.
"""

import secrets
import struct
import sys
import threading
from array import array
from collections import Counter, defaultdict
from collections.abc import Iterable
from contextlib import contextmanager
from dataclasses import dataclass

from django.db import connection, transaction
from django.utils import timezone

from loopx_site.engines.fulltext import bm25

MAX_QUERY_TOKENS = bm25.MAX_QUERY_TOKENS
BUCKET = 2048  # slots per posting block
_CHUNK = 500  # parameters per IN (...) list
_EPS = 1e-9  # relative slack of every bound: exactness never rests on rounding
_TINY = 1e-12
_BODY_COST = 600  # scoring one document from its body costs about this many postings (measured)
_VERIFY_ALWAYS = 64  # this few documents are always scored from their bodies
_ROUND_TRIP = 8192  # postings worth one more statement
_TABLE_MIN = 4096  # postings from which a weight table pays
_TABLE_MAX = 1 << 16  # (tf, dl) pairs of one weight table
_BULK = 32  # new documents from which one write builds their postings with numpy
_SMALL = 50_000  # documents below which a search simply reads every query term's postings
_FIRST_BATCH = 32  # documents scored exactly in the first round of best_first
_PROBE_SHARE = 2  # look candidates up when fewer than half the next list's postings
_SAMPLED = 1024  # sample an array this many times longer than the top wanted (≥ 64)
_BIG_ENDIAN = sys.byteorder == "big"
_NARROW_MAX = 255  # tf and dl up to this: a posting in 4 bytes, else 12 (``_encode``)
# a block's format, told by its bytes per posting: 4, the slot's offset in its bucket and
# one byte each for tf and dl; 6, migration 0010's absolute slot and a byte each (read,
# no longer written); else 12, three little-endian u4 (any tf and dl)
_COMPACT, _NARROW = 4, 6
assert array("I").itemsize == 4
assert BUCKET <= 1 << 16  # a slot's offset in its bucket fits in two bytes
assert _SAMPLED >= 64  # ``_largest``'s sample has a stride of at least one


_TERMS_SQL = (  # statistics and per-term df and bounds, from the covering index only
    "SELECT n.id, n.documents, n.tokens, n.next_slot, b.term, SUM(b.count), MAX(b.max_tf), "
    "MIN(b.min_dl), MIN(b.max_tf) FROM core_searchnamespace n "
    "LEFT JOIN core_searchpostingblock b "
    "ON b.namespace_id = n.id AND b.term IN (?) WHERE n.name = %s "
    "GROUP BY n.id, n.documents, n.tokens, n.next_slot, b.term"
)
_SMALL_SQL = (  # one statement, so statistics and postings come from one snapshot
    "SELECT n.documents, n.tokens, n.next_slot, b.term, b.bucket, b.count, b.data "
    "FROM core_searchnamespace n "
    "LEFT JOIN core_searchpostingblock b ON b.namespace_id = n.id AND b.term IN (?) "
    "WHERE n.name = %s"
)
# Blocks are put in bucket order here, not by ORDER BY: PostgreSQL 15 does not take the
# unique index's order for ``term = ANY(…)`` and sorted the blobs themselves (measured:
# two lists of 1M postings in 14.2 ms sorted by the server, 7.8 ms unsorted)
_LISTS_SQL = (  # whole posting lists
    "SELECT term, bucket, count, data FROM core_searchpostingblock "
    "WHERE namespace_id = %s AND term IN (?)"
)
_BUCKETS_SQL = (  # some blocks of one term
    "SELECT bucket, count, data FROM core_searchpostingblock "
    "WHERE namespace_id = %s AND term = %s AND bucket IN (?)"
)
_REFS_SQL = "SELECT slot, ref FROM core_searchdocument WHERE namespace = %s AND slot IN (?)"
_BODIES_SQL = (
    "SELECT slot, ref, length, body FROM core_searchdocument WHERE namespace = %s AND slot IN (?)"
)
_LOCK_SQL = (  # creates the namespace if needed and locks its row until commit
    "INSERT INTO core_searchnamespace (name, documents, tokens, next_slot, revision) "
    "VALUES (%s, 0, 0, 0, 0) ON CONFLICT (name) DO UPDATE SET name = excluded.name "
    "RETURNING id, documents, tokens, next_slot"
)
_DOCS_SQL = (
    "SELECT ref, id, slot, length, body FROM core_searchdocument "
    "WHERE namespace = %s AND ref IN (?)"
)
_INSERT_SQL = (
    "INSERT INTO core_searchdocument (namespace, ref, body, slot, length, updated_at) "
    "VALUES (%s, %s, %s, %s, %s, %s)"
)
_STATS_SQL = (
    "UPDATE core_searchnamespace SET documents = %s, tokens = %s, next_slot = %s, "
    "revision = %s WHERE id = %s"
)
_BLOCKS_SQL = (
    "SELECT term, max_tf, min_dl, count, data FROM core_searchpostingblock "
    "WHERE namespace_id = %s AND bucket = %s AND term IN (?)"
)
_UPSERT_SQL = (
    "INSERT INTO core_searchpostingblock (namespace_id, term, bucket, count, max_tf, min_dl, "
    "data) VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (namespace_id, term, bucket) "
    "DO UPDATE SET count = excluded.count, max_tf = excluded.max_tf, "
    "min_dl = excluded.min_dl, data = excluded.data"
)
_DROP_SQL = (
    "DELETE FROM core_searchpostingblock WHERE namespace_id = %s AND term = %s AND bucket = %s"
)
_COUNT_SQL = "SELECT COUNT(*) FROM core_searchdocument WHERE namespace = %s"
_DELETE_DOC_SQL = "DELETE FROM core_searchdocument WHERE id = %s"
_UPDATE_DOC_SQL = (
    "UPDATE core_searchdocument SET body = %s, length = %s, updated_at = %s WHERE id = %s"
)
_NAMES_SQL = "SELECT DISTINCT namespace FROM core_searchdocument"
_ALL_DOCS_SQL = "SELECT ref, body FROM core_searchdocument WHERE namespace = %s ORDER BY id"
_DROP_NAMESPACE_SQL = (  # its blocks go by the foreign key's cascade, done here explicitly
    "DELETE FROM core_searchpostingblock WHERE namespace_id IN "
    "(SELECT id FROM core_searchnamespace WHERE name = %s)"
)
_DROP_DOCS_SQL = "DELETE FROM core_searchdocument WHERE namespace = %s"
_DROP_STATS_SQL = "DELETE FROM core_searchnamespace WHERE name = %s"


def _in_list(sql: str, values) -> tuple[str, list]:
    """``sql`` with its ``IN (?)`` made to take ``values``, and the parameters standing
    for them (never a value in the text). PostgreSQL: one array parameter (``= ANY``),
    so the statement's text is the same whatever the count — parsed once by the driver,
    prepared once by the server. SQLite: one placeholder each."""
    if connection.vendor == "postgresql":
        return sql.replace("IN (?)", "= ANY(%s)"), [list(values)]
    return sql.replace("(?)", "(" + ",".join(["%s"] * len(values)) + ")"), list(values)


@dataclass(frozen=True)
class Hit:
    ref: str
    score: float


def tokens(text: str) -> list[str]:
    """Distinct analysed tokens of ``text`` (``bm25.ENGLISH``: stop words dropped,
    Snowball stems), in order, at most 32."""
    return bm25.query_tokens(text)


def index(namespace: str, ref: str, body: str) -> None:
    """Insert or replace one document (idempotent)."""
    _apply(namespace, {ref: body})


def index_many(namespace: str, items: Iterable[tuple[str, str]]) -> None:
    """Insert or replace many documents of one namespace in one transaction."""
    _apply(namespace, dict(items))


def remove(namespace: str, ref: str) -> None:
    _apply(namespace, {ref: None})


def count(namespace: str) -> int:
    """Documents in ``namespace``."""
    with connection.cursor() as cursor:
        cursor.execute(_COUNT_SQL, [namespace])
        return cursor.fetchone()[0]


def search(namespace: str, query: str, *, limit: int = 10) -> list[Hit]:
    """Exact BM25 top-``limit`` hits for ``query`` in ``namespace``, best first, read from
    the database (the package's ``search`` asks the process's copy first)."""
    words = tokens(query)
    if not words or limit <= 0:
        return []
    return search_words(namespace, words, limit)


def search_words(namespace: str, words: list[str], limit: int) -> list[Hit]:
    """``search`` for already analysed ``words`` (non-empty), from the database."""
    if _sizes.get(namespace, 0) < _SMALL:
        return _search_small(namespace, words, limit)
    with _snapshot():
        return _search(namespace, words, limit)


#: documents per namespace at its last search (a hint: the path taken, never the result)
_sizes: dict[str, int] = {}


def _remember(namespace: str, documents: int) -> None:
    if len(_sizes) > 4096:
        _sizes.clear()
    _sizes[namespace] = documents


def _search_small(namespace: str, words: list[str], limit: int) -> list[Hit]:
    """A small namespace: read the statistics and every query term's postings in one
    statement (one snapshot by construction) and score them all."""
    sql, listed = _in_list(_SMALL_SQL, words)
    rows = _fetch(sql, [*listed, namespace])
    if not rows:
        return []
    documents, total, next_slot = rows[0][:3]
    _remember(namespace, documents)
    blobs: dict[str, list[tuple[int, int, bytes]]] = defaultdict(list)
    for row in rows:
        if row[3] is not None:
            blobs[row[3]].append(row[4:])
    if not blobs:
        return []
    terms = {}
    for word, parts in blobs.items():
        postings = _postings(sorted(parts, key=_bucket))
        term = terms[word] = _Term(word, postings.slots.size, 0, 0, documents, total / documents)
        _decode_postings(term, postings, total / documents)
    return _ranked(namespace, words, terms, next_slot, limit)


@contextmanager
def _snapshot():
    """Every statement of one search reads the same committed state.

    Inside a caller's transaction the search reads in the caller's snapshot. Otherwise,
    PostgreSQL: a read-only REPEATABLE READ transaction (``_pg_snapshot``). SQLite: a
    deferred read transaction (WAL:
    one snapshot from its first read, no write lock; ``atomic()`` would begin IMMEDIATE
    and queue behind writers)."""
    if connection.in_atomic_block:
        yield
        return
    if connection.vendor == "postgresql":
        yield from _pg_snapshot()
        return
    connection.ensure_connection()
    with connection.wrap_database_errors:
        sqlite = connection.connection
        if sqlite.in_transaction:  # not Django's, but someone's: read inside it
            yield
            return
        sqlite.execute("BEGIN DEFERRED")
        try:
            yield
        except BaseException:
            if sqlite.in_transaction:
                sqlite.execute("ROLLBACK")
            raise
        sqlite.execute("COMMIT")  # nothing written: ends the read transaction


def _pg_snapshot():
    """A read-only REPEATABLE READ transaction opened by one ``BEGIN ISOLATION LEVEL
    REPEATABLE READ READ ONLY`` (one round trip, and the transaction's first statement, so
    it also holds through PgBouncer's transaction pooling), the connection's own
    settings restored after it."""
    import psycopg

    connection.ensure_connection()
    raw = connection.connection
    if raw.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
        yield  # not Django's, but someone's: read inside it
        return
    with connection.wrap_database_errors:
        level, read_only = raw.isolation_level, raw.read_only
        raw.isolation_level, raw.read_only = psycopg.IsolationLevel.REPEATABLE_READ, True
        try:
            with raw.transaction():
                yield
        finally:
            raw.isolation_level, raw.read_only = level, read_only


class _Term:
    """One query term's statistics, bound and (once read) postings."""

    __slots__ = (
        "bound",
        "cells",
        "contribution",
        "df",
        "dl",
        "idf",
        "max_tf",
        "min_dl",
        "slots",
        "tf",
        "word",
    )

    def __init__(self, word: str, df: int, max_tf: int, min_dl: int, documents: int, avgdl):
        self.word, self.df, self.max_tf, self.min_dl = word, df, max_tf, min_dl
        self.idf = bm25.idf(documents, df)
        # BM25 grows with tf and falls with dl: no posting of the term scores above this
        # (bounds not recorded: tf / (tf + K) < 1 for any posting)
        weight = bm25.weight(float(max_tf), float(min_dl), avgdl) if max_tf > 0 else bm25.K1_PLUS_1
        self.bound = self.idf * weight * (1.0 + _EPS) + _TINY
        self.slots = self.tf = self.dl = self.contribution = self.cells = None


def _search(namespace: str, words: list[str], limit: int) -> list[Hit]:
    sql, listed = _in_list(_TERMS_SQL, words)
    rows = _fetch(sql, [*listed, namespace])
    found = {row[4]: row for row in rows if row[4] is not None}
    if not found:
        return []
    ns_id, documents, total, next_slot = rows[0][:4]
    _remember(namespace, documents)
    avgdl = total / documents
    terms = {
        # a block without recorded bounds (max_tf 0) leaves its term unbounded
        w: _Term(w, int(r[5]), int(r[6]) if r[8] else 0, int(r[7]), documents, avgdl)
        for w, r in found.items()
    }
    return _Search(namespace, ns_id, words, terms, avgdl, next_slot, limit).run()


class _Search:
    """MaxScore over whole posting lists: read the lists of the terms that can lift a
    document into the top-k (highest bound first) until the terms left unread cannot,
    together, lift a document holding none of the read ones to the k-th best score
    known; then score exactly the documents that still can — from their stored bodies
    when they are few, else by looking them up in the unread lists (``_probe``) — instead
    of decoding the long lists of common terms."""

    def __init__(self, namespace, ns_id, words, terms, avgdl, size, limit):
        self.namespace, self.words, self.terms = namespace, words, terms
        self.avgdl, self.size, self.limit = avgdl, size, limit
        self.exact = _Exact(namespace, [terms[w] for w in words if w in terms], avgdl)
        self.lists = _Lists(ns_id, size)
        self.unread = sorted(terms.values(), key=lambda t: (-t.bound, t.df, t.word))
        self.read: list[_Term] = []

    def run(self) -> list[Hit]:
        while self.unread:
            # Try to finish from the read lists when that costs less than reading the
            # next one: the per-document work is about the postings already read.
            if self.read and sum(t.df for t in self.read) <= self.unread[0].df:
                hits = self.finish()
                if hits is not None:
                    return hits
            batch = [self.unread.pop(0)]
            while self.unread and self.unread[0].df <= max(_ROUND_TRIP, sum(t.df for t in batch)):
                batch.append(self.unread.pop(0))
            _read_postings(self.lists, batch, self.avgdl)
            self.read.extend(batch)
        return _ranked(self.namespace, self.words, self.terms, self.size, self.limit, self.kth())

    def kth(self) -> float:
        """A floor of the real k-th best score, with slack: the k-th best of the
        documents scored exactly so far (0 before k are)."""
        return self.exact.kth(self.limit) * (1.0 - _EPS)

    def finish(self) -> list[Hit] | None:
        """The exact top-k, or ``None`` when a document holding none of the read terms
        could still reach the k-th best, or when the documents that could are many
        beside the next list's postings (decoding that list is then the cheaper way)."""

        read, unread, exact = self.read, self.unread, self.exact
        outside = _outside(unread, self.avgdl)  # the most a document outside can score
        if len(read) == 1 and read[0].cells is not None:
            found = self.candidates_by_cell(read[0], outside)
        else:
            found = self.candidates(outside)
        if found is None:
            return None
        slots, upper, kth = found
        if exact.best_first(slots, upper, kth, self.limit, self.budget(), len(read)):
            return exact.top(self.limit)
        slots = _distinct(slots)
        if slots.size * _PROBE_SHARE > unread[0].df:  # decoding the next list is cheaper
            return None
        scored, totals = _probe(
            self.lists, self.words, self.avgdl, read, unread, slots, self.limit, kth
        )
        return _hits(self.namespace, *_cut(scored, totals, self.limit), self.limit)

    def candidates(self, outside: float):
        """The documents of the read lists whose upper bound reaches the floor (repeats
        possible), their bounds and the floor; ``None`` while a document holding none of
        the read terms could still reach it."""
        import numpy as np

        read, exact = self.read, self.exact
        partials = _partials(read, self.size)
        exact.score(_best(read, [v for v, _ in partials], _FIRST_BATCH).tolist())  # high
        if outside >= self.kth():  # (also when fewer than k documents are known)
            return None
        ceilings = _uppers(read, partials, self.unread, self.avgdl)
        exact.score(_best(read, ceilings, _FIRST_BATCH).tolist())  # the most promising
        kth = self.kth()
        slots = np.concatenate([t.slots[u >= kth] for t, u in zip(read, ceilings, strict=True)])
        return slots, np.concatenate([u[u >= kth] for u in ceilings]), kth

    def candidates_by_cell(self, term: "_Term", outside: float):
        """``candidates`` with one read list whose weights came from a table: a
        document's partial score and upper bound depend only on its (tf, dl) cell, so
        both are computed once per cell, and the best documents are found by counting
        cells instead of partitioning the list."""
        cells, exact = term.cells, self.exact
        exact.score(cells.best(term.slots, cells.values, _FIRST_BATCH))  # real, high scores
        if outside >= self.kth():
            return None
        used, length = cells.tf_dl()
        upper = cells.values + _room_ceiling(self.unread, length, used, self.avgdl)
        upper = upper * (1.0 + _EPS) + _TINY
        exact.score(cells.best(term.slots, upper, _FIRST_BATCH))  # the most promising
        kth = self.kth()
        alive = (upper >= kth)[cells.key]
        return term.slots[alive], upper[cells.key[alive]], kth

    def budget(self) -> int:
        """How many documents are worth scoring from their bodies: about the work of
        decoding the shortest unread list."""
        return max(_VERIFY_ALWAYS, self.unread[0].df // _BODY_COST)


def _distinct(slots):
    """``slots`` ascending, each once (a merge sort: often runs already ascending)."""
    import numpy as np

    slots = np.sort(slots, kind="stable")
    return slots[np.concatenate(([True], slots[1:] != slots[:-1]))] if slots.size else slots


def _best(read: list["_Term"], values, n: int):
    """The slots of each read term's ``n`` highest ``values`` (repeats possible)."""
    import numpy as np

    return np.concatenate([t.slots[_largest(v, n)] for t, v in zip(read, values, strict=True)])


def _largest(values, n: int):
    """The positions of ``n`` largest ``values`` (all when fewer; ties at the ``n``-th
    taken in any order). A long array is first cut at the ``n``-th largest of an evenly
    spaced sample of it — at or below the ``n``-th largest of the whole, so nothing of
    the answer is cut — and only what passes is partitioned."""
    import numpy as np

    if values.size <= n:
        return np.arange(values.size)
    if values.size > _SAMPLED * n:
        sample = values[:: values.size // (64 * n)]  # about 64·n of them
        cut = np.partition(sample, sample.size - n)[sample.size - n]
        passed = np.flatnonzero(values >= cut)
        return passed[np.argpartition(values[passed], passed.size - n)[passed.size - n :]]
    return np.argpartition(values, values.size - n)[values.size - n :]


def _partials(read: list["_Term"], size: int):
    """Per read term, for each document holding it: its partial score (the read terms'
    contributions: a lower bound of its real score, every contribution being positive)
    and the tokens the read terms leave it (its ``dl`` less their tfs)."""
    import numpy as np

    if len(read) == 1:  # the common first round: nothing to add up
        (term,) = read
        return [(term.contribution, term.dl.astype(np.int64) - term.tf)]
    partial, tf_read = _scratch.arrays(size)
    try:
        for term in read:  # (slots distinct: the same sums as ``partial[slots] += …``)
            np.add.at(partial, term.slots, term.contribution)
            tf_read[term.slots] += term.tf  # (add.at has no fast loop from uint8)
        found = []
        for term in read:
            left = np.take(tf_read, term.slots)
            np.subtract(term.dl, left, out=left)
            found.append((np.take(partial, term.slots), left))
        return found
    finally:
        for term in read:  # back to zeros, whatever happened
            partial[term.slots] = 0.0
            tf_read[term.slots] = 0


def _uppers(read: list["_Term"], partials, unread: list["_Term"], avgdl: float):
    """Per read term, for each document holding it: an upper bound of its real score —
    its partial score plus the most the unread terms can add with its own ``dl`` and
    the tokens left (``_room_ceiling``). The bounds have slack, so none is below the
    real score whatever the rounding."""
    uppers = []
    for term, (values, left) in zip(read, partials, strict=True):
        upper = _room_ceiling(unread, term.dl, term.dl - left, avgdl)  # a fresh array
        upper += values
        upper *= 1.0 + _EPS
        upper += _TINY
        uppers.append(upper)
    return uppers


def _gains(unread: list["_Term"], room: int, dl, avgdl: float):
    """Per unread term and per document length in ``dl``: the term's marginal gains
    ``idf · (w(x, dl) − w(x − 1, dl))`` for x = 1 … its largest possible tf (its
    ``max_tf``, at most ``room``), rows stacked; zero where the length is below the
    term's ``min_dl`` (no document that short holds it). BM25's weight is concave in tf
    (``1 − b > 0``), so each term's gains fall with x."""
    import numpy as np

    length_part = bm25.K1 * (bm25.ONE_MINUS_B + bm25.B * dl / avgdl)
    rows = []
    for other in unread:
        top = min(other.max_tf, room) if other.max_tf > 0 else room
        x = np.arange(top + 1, dtype=np.float64)[:, None]
        weight = x * bm25.K1_PLUS_1 / (x + length_part)
        gains = other.idf * np.diff(weight, axis=0)
        if other.min_dl > 1:
            gains[:, dl < other.min_dl] = 0.0
        rows.append(gains)
    return np.concatenate(rows, axis=0)


def _best_sums(gains, rooms):
    """Column by column: the largest total of at most ``rooms`` gains. The terms'
    gains each fall with x, so the largest ``r`` gains of a column are a feasible choice
    of tfs (a prefix per term) with ``r`` tokens: the most the unread terms can add to
    a document of that length with ``r`` tokens to spare (greedy is optimal for a
    separable concave allocation)."""
    import numpy as np

    ordered = -np.sort(-gains, axis=0)
    sums = np.vstack([np.zeros((1, gains.shape[1])), np.cumsum(ordered, axis=0)])
    return sums[np.minimum(rooms, gains.shape[0])]


def _ceilings(unread: list["_Term"], top_dl: int, avgdl: float):
    """``table[room, dl]``: the most the unread terms can add to a document of length
    ``dl`` (at most ``top_dl``) whose read terms leave ``room`` tokens — its tokens
    shared among the unread terms, each term at most its ``max_tf``. ``None`` when the
    table would be large (long documents): the bound is then taken term by term."""
    import numpy as np

    if not unread:
        return np.zeros((top_dl + 1, top_dl + 1))
    tops = [min(t.max_tf, top_dl) if t.max_tf > 0 else top_dl for t in unread]
    if (top_dl + 1) * max(1, sum(tops)) > _TABLE_MAX:
        return None
    dl = np.arange(top_dl + 1, dtype=np.float64)
    return _best_sums(_gains(unread, top_dl, dl, avgdl), np.arange(top_dl + 1))


def _outside(unread: list["_Term"], avgdl: float) -> float:
    """The most a document holding none of the read terms can score: per length ``dl``,
    its ``dl`` tokens shared among the unread terms (``_best_sums``), the largest over
    the lengths that matter — beyond every term's ``min_dl`` and total ``max_tf`` a
    longer document only weighs less. Falls back to the sum of the terms' bounds when
    a term's tf is unbounded or the range is long."""
    import numpy as np

    loose = sum(t.bound for t in unread)
    if not unread or any(t.max_tf <= 0 for t in unread):
        return loose
    shortest = max(1, min(t.min_dl for t in unread))
    longest = max(max(t.min_dl for t in unread), sum(t.max_tf for t in unread))
    if (longest - shortest + 1) * sum(t.max_tf for t in unread) > _TABLE_MAX:
        return loose
    dl = np.arange(shortest, longest + 1, dtype=np.float64)
    sums = _best_sums(_gains(unread, longest, dl, avgdl), np.arange(shortest, longest + 1))
    tight = float(np.diagonal(sums).max()) * (1.0 + _EPS) + _TINY
    return min(loose, tight)


class _Exact:
    """Documents scored exactly from their stored bodies: the same analysis, statistics
    and operation order as the postings (and as ``bm25``), so the scores are identical."""

    def __init__(self, namespace: str, terms: list["_Term"], avgdl: float):
        self.namespace, self.terms, self.avgdl = namespace, terms, avgdl  # query order
        self.hits: dict[int, Hit] = {}

    def best_first(self, slots, upper, kth: float, limit: int, budget: int, repeats: int):
        """Score the documents at ``slots`` (each at most ``repeats`` times) whose
        ``upper`` bounds reach the floor ``kth``, the highest bound first, until none
        left unscored can reach the k-th best exact score: then ``top`` is the exact
        top-k (``True``). ``False`` once more than ``budget`` documents would need
        scoring."""
        import numpy as np

        batch = _FIRST_BATCH
        while True:
            alive = upper >= kth
            slots, upper = slots[alive], upper[alive]
            if slots.size > repeats * budget:
                return False
            todo = np.fromiter((s not in self.hits for s in slots.tolist()), bool, slots.size)
            pending = set(slots[todo].tolist())
            if len(pending) <= batch:
                self.score(pending)
                return True
            if len(pending) > budget or len(self.hits) >= budget:
                return False
            order = np.argpartition(-upper, min(batch, upper.size) - 1)[:batch]
            self.score(slots[order].tolist())
            kth = max(kth, self.kth(limit) * (1.0 - _EPS))
            batch *= 2

    def kth(self, limit: int) -> float:
        """The ``limit``-th best exact score found so far (0 before ``limit`` are)."""
        if len(self.hits) < limit:
            return 0.0
        return sorted((h.score for h in self.hits.values()), reverse=True)[limit - 1]

    def score(self, slots: Iterable[int]) -> None:
        todo = list({s for s in slots if s not in self.hits})
        avgdl = self.avgdl
        with connection.cursor() as cursor:
            for lo in range(0, len(todo), _CHUNK):
                chunk = todo[lo : lo + _CHUNK]
                sql, listed = _in_list(_BODIES_SQL, chunk)
                cursor.execute(sql, [self.namespace, *listed])
                for slot, ref, length, body in cursor.fetchall():
                    tf = Counter(bm25.document_tokens(body))
                    score = 0.0
                    for term in self.terms:  # query order, like the reference
                        if term.word in tf:
                            weight = bm25.weight(float(tf[term.word]), float(length), avgdl)
                            score += term.idf * weight
                    self.hits[slot] = Hit(ref=ref, score=score)

    def top(self, limit: int) -> list[Hit]:
        return sorted(self.hits.values(), key=lambda h: (-h.score, h.ref))[:limit]


def _probe(lists, words, avgdl, read, unread, slots, limit: int, kth: float):
    """Exact scores of the documents at ``slots`` (ascending, distinct), from the posting
    lists, each document found by binary search: in a read term's decoded list, and in
    an unread term's list as stored (``_Lists.look_up``). The documents
    that cannot reach ``kth`` (a floor of the ``limit``-th best) drop out on the way:
    after each unread term (highest bound first), a document whose partial
    score plus what the terms still unread could add (``_room_ceiling``) is below the
    floor, which rises to the k-th best partial score (contributions are positive). The
    contributions are added in query order (0 where a document lacks the term: adding 0
    changes no sum), so the scores are the reference's bit for bit. Returns the
    documents left and their scores."""
    import numpy as np

    per_term: dict[str, object] = {}
    partial = np.zeros(slots.size, dtype=np.float64)
    used = np.zeros(slots.size, dtype=np.int64)
    length = np.zeros(slots.size, dtype=np.int64)
    for term in read:
        values, tf, dl = _in_read(term, slots)
        per_term[term.word] = values
        partial += values
        used += tf
        # (a document lacking this term has its length from another read term)
        length = np.maximum(length, dl)
    for i, term in enumerate(unread):
        values, tf = lists.look_up(term, slots, avgdl)
        per_term[term.word] = values
        rest = unread[i + 1 :]
        if not rest:
            break
        partial += values
        used += tf
        if partial.size > limit:
            kth = max(kth, float(np.partition(partial, -limit)[-limit]) * (1.0 - _EPS))
        upper = (partial + _room_ceiling(rest, length, used, avgdl)) * (1.0 + _EPS) + _TINY
        keep = upper >= kth
        slots, partial, used, length = slots[keep], partial[keep], used[keep], length[keep]
        per_term = {w: v[keep] for w, v in per_term.items()}
    total = np.zeros(slots.size, dtype=np.float64)
    for word in words:  # query order, like the reference
        if word in per_term:
            total += per_term[word]
    return slots, total


def _in_read(term: "_Term", slots):
    """A read term's contribution, tf and dl for each of ``slots`` (0 where absent): by
    binary search in its list for a few slots (measured: 2k in a 326k-posting list, 0.06
    ms against 0.7), by scattering its list into the slot accumulators for many."""
    import numpy as np

    if slots.size * 16 < term.slots.size:
        at, held = _positions(term.slots, slots)
        return (
            np.where(held, term.contribution[at], 0.0),
            np.where(held, term.tf[at], 0),
            np.where(held, term.dl[at], 0),
        )
    scores, counts = _scratch.arrays(int(max(term.slots[-1], slots[-1])) + 1)  # ascending
    try:
        scores[term.slots] = term.contribution
        counts[term.slots] = term.tf.astype(np.int64) + (term.dl.astype(np.int64) << 32)
        values, packed = scores[slots], counts[slots]
    finally:
        scores[term.slots] = 0.0
        counts[term.slots] = 0
    return values, packed & 0xFFFFFFFF, packed >> 32


def _room_ceiling(unread: list["_Term"], length, used, avgdl: float):
    """Per document (its ``length`` and the tokens ``used`` by the terms already
    counted): the most the ``unread`` terms can add (``_ceilings``; term by term when
    the table would be large)."""
    import numpy as np

    top = int(length.max()) if length.size else 0
    table = _ceilings(unread, top, avgdl)
    left = length - used
    if table is not None:
        return table[left, length]
    room = left.astype(np.float64)
    ceiling = np.zeros(length.size, dtype=np.float64)
    for other in unread:
        tf = np.minimum(room, float(other.max_tf)) if other.max_tf > 0 else room
        ceiling += _weights(other.idf, tf, length, avgdl)
    return ceiling


class _Lists:
    """The posting lists of one search as stored (each term's blocks in bucket order:
    slots ascending), each fetched at most once."""

    def __init__(self, ns_id: int, size: int):
        self.ns_id = ns_id
        self.buckets = (size - 1) // BUCKET + 1  # of the namespace's slots
        self.stored: dict[str, _Postings] = {}

    def fetch(self, terms: list["_Term"]) -> None:
        missing = [t.word for t in terms if t.word not in self.stored]
        if not missing:
            return
        blobs: dict[str, list[tuple[int, int, bytes]]] = defaultdict(list)
        sql, listed = _in_list(_LISTS_SQL, missing)
        rows = _fetch(sql, [self.ns_id, *listed])
        for word, *block in rows:
            blobs[word].append(block)
        for word in missing:
            self.stored[word] = _postings(sorted(blobs[word], key=_bucket))

    def look_up(self, term: "_Term", slots, avgdl: float):
        """``term``'s contribution and tf for each of ``slots`` (ascending; 0 where
        absent), by binary search in its list — fetched whole before, else only the
        blocks holding ``slots`` — without decoding the rest. Blocks of most buckets are
        fetched as the whole list: one statement without a bucket filter is cheaper
        (measured: a 326k-posting list whole in 1.8 ms, all its 489 buckets by number
        in 2.7 ms)."""
        import numpy as np

        if term.word not in self.stored:
            buckets = _distinct(slots // BUCKET).tolist()
            if len(buckets) * 4 > self.buckets * 3:
                self.fetch([term])
        if term.word in self.stored:
            postings = self.stored[term.word]
        else:
            parts = []
            for lo in range(0, len(buckets), _CHUNK):
                chunk = buckets[lo : lo + _CHUNK]
                sql, listed = _in_list(_BUCKETS_SQL, chunk)
                parts += _fetch(sql, [self.ns_id, term.word, *listed])
            postings = _postings(sorted(parts, key=_bucket))
        listed = postings.slots
        values = np.zeros(slots.size, dtype=np.float64)
        tf = np.zeros(slots.size, dtype=np.int64)
        at, held = _positions(listed, slots)
        at = at[held]
        tf[held] = postings.tf[at]
        values[held] = _weights(term.idf, postings.tf[at], postings.dl[at], avgdl)
        return values, tf


def _positions(listed, slots):
    """For each of ``slots``: its position in ``listed`` (ascending) and whether it is
    there (where not, the position is any valid one)."""
    import numpy as np

    if not listed.size:
        return np.zeros(slots.size, dtype=np.intp), np.zeros(slots.size, dtype=bool)
    at = np.minimum(np.searchsorted(listed, slots), listed.size - 1)
    return at, listed[at] == slots


def _read_postings(lists: _Lists, batch: list["_Term"], avgdl: float) -> None:
    """Decode the whole posting lists of ``batch``."""
    lists.fetch(batch)
    for term in batch:
        _decode_postings(term, lists.stored[term.word], avgdl)


@dataclass(frozen=True)
class _Postings:
    """One term's postings as three parallel contiguous arrays, slots ascending (intp:
    every gather and scatter indexes with them)."""

    slots: object
    tf: object
    dl: object


def _bucket(block) -> int:
    return block[0]


def _postings(blocks) -> _Postings:
    """The postings of ``blocks`` — (bucket, count, data) of one term, in bucket order —
    decoded per run of blocks of one format (``_encode``)."""
    import numpy as np

    runs: list[tuple[int, list]] = []
    for block in blocks:
        width = len(block[2]) // block[1]
        if runs and runs[-1][0] == width:
            runs[-1][1].append(block)
        else:
            runs.append((width, [block]))
    decoded = [_decoded_run(width, run) for width, run in runs]
    if len(decoded) == 1:
        return decoded[0]
    if not decoded:
        return _Postings(np.zeros(0, np.intp), np.zeros(0, np.uint8), np.zeros(0, np.uint8))
    return _Postings(
        *(np.concatenate([getattr(p, f) for p in decoded]) for f in ("slots", "tf", "dl"))
    )


def _decoded_run(width: int, blocks) -> _Postings:
    """Blocks of one format as arrays. The fields are copied out of the blobs: they are
    strided there, and arithmetic on strided fields runs several times slower."""
    import numpy as np

    data = b"".join(block[2] for block in blocks)
    if width == _COMPACT:
        fields = np.frombuffer(data, dtype=[("offset", "<u2"), ("tf", "u1"), ("dl", "u1")])
        bases = np.array([block[0] for block in blocks], np.intp) * BUCKET
        slots = np.repeat(bases, [block[1] for block in blocks])
        slots += fields["offset"]
    else:
        narrow = width == _NARROW
        fields = np.frombuffer(
            data,
            dtype=[
                ("slot", "<u4"),
                ("tf", "u1" if narrow else "<u4"),
                ("dl", "u1" if narrow else "<u4"),
            ],
        )
        slots = fields["slot"].astype(np.intp)
    return _Postings(slots, np.ascontiguousarray(fields["tf"]), np.ascontiguousarray(fields["dl"]))


def _decode_postings(term: "_Term", postings: "_Postings", avgdl: float) -> None:
    term.slots, term.tf, term.dl = postings.slots, postings.tf, postings.dl
    term.contribution = _contributions(term, avgdl)


def _contributions(term: "_Term", avgdl: float):
    """``idf · w(tf, dl)`` of every posting of ``term``, bit for bit the reference's
    operations: evaluated once per distinct (tf, dl) pair in a table when the pairs are
    few (short documents: always), elementwise otherwise."""
    import numpy as np

    if term.tf.size >= _TABLE_MIN:
        top_tf, top_dl = int(term.tf.max()), int(term.dl.max())
    if term.tf.size >= _TABLE_MIN and (top_tf + 1) * (top_dl + 1) <= _TABLE_MAX:
        tf, dl = np.meshgrid(np.arange(top_tf + 1), np.arange(top_dl + 1), indexing="ij")
        table = _weights(term.idf, tf.ravel(), dl.ravel(), avgdl)
        key = term.tf.astype(np.intp)
        key *= top_dl + 1
        key += term.dl
        term.cells = _Cells(table, key, top_dl + 1)
        return table[key]
    return _weights(term.idf, term.tf, term.dl, avgdl)


class _Cells:
    """A posting list's (tf, dl) cells: cell ``tf · width + dl`` of each posting
    (``key``), how many postings each holds and the term's contribution in each."""

    def __init__(self, values, key, width: int):
        import numpy as np

        self.values, self.key, self.width = values, key, width
        self.counts = np.bincount(key, minlength=values.size)

    def tf_dl(self):
        """Each cell's tf and dl (a cell with dl < tf holds nothing: both 0 there)."""
        import numpy as np

        index = np.arange(self.values.size)
        tf, dl = index // self.width, index % self.width
        empty = dl < tf
        tf[empty] = dl[empty] = 0
        return tf, dl

    def kth(self, per_cell, limit: int) -> float:
        """The ``limit``-th largest of ``per_cell`` over the postings (0 if fewer)."""
        import numpy as np

        order = np.argsort(-per_cell, kind="stable")
        reached = np.searchsorted(np.cumsum(self.counts[order]), limit)
        return float(per_cell[order[reached]]) if reached < per_cell.size else 0.0

    def best(self, slots, per_cell, n: int) -> list[int]:
        """The slots of ``n`` postings with the highest ``per_cell`` values (ties at the
        ``n``-th taken in slot order)."""
        import numpy as np

        cut = self.kth(per_cell, n)
        above = np.flatnonzero((per_cell > cut)[self.key])
        tied = np.flatnonzero((per_cell == cut)[self.key])[: max(0, n - above.size)]
        return slots[np.concatenate([above, tied])].tolist()


def _weights(idf: float, tf, dl, avgdl: float):
    """``idf · w(tf, dl)`` elementwise, in float64 with ``bm25.weight``'s operations in
    its order (so equal, bit for bit, to the reference's scalar arithmetic)."""
    import numpy as np

    tf = np.asarray(tf, dtype=np.float64)
    dl = np.asarray(dl, dtype=np.float64)
    k1, b, one_minus_b, k1_plus_1 = bm25.K1, bm25.B, bm25.ONE_MINUS_B, bm25.K1_PLUS_1
    return idf * (tf * k1_plus_1 / (tf + k1 * (one_minus_b + b * dl / avgdl)))


class _Scratch(threading.local):
    """Slot-indexed accumulators reused by every search of a thread, all zeros between
    searches: a fresh 1M-slot array costs a page fault per 4 KiB on first touch, more
    than the arithmetic done in it."""

    def arrays(self, size: int):
        import numpy as np

        if getattr(self, "scores", None) is None or self.scores.size < size:
            self.scores = np.zeros(max(size, 1024), dtype=np.float64)
            self.counts = np.zeros(max(size, 1024), dtype=np.int64)
        return self.scores, self.counts


_scratch = _Scratch()


def _kth_contribution(term: "_Term", limit: int) -> float:
    """The ``limit``-th largest contribution of ``term`` (0 if unknown or fewer): every
    document's score is at least its contribution of any one term (adding positive
    numbers never rounds below an addend), so the real ``limit``-th best score is at
    least this."""
    return term.cells.kth(term.cells.values, limit) if term.cells is not None else 0.0


def _ranked(namespace: str, words, terms: dict[str, "_Term"], size: int, limit: int, floor=0.0):
    """The exact top-``limit`` from the posting lists of every query term: per document
    the sum of its terms' contributions, added in query order like the reference.
    ``floor``: a score the ``limit``-th best is known to reach (0: none known)."""
    import numpy as np

    present = [terms[w] for w in words if w in terms]
    if len(present) == 1:  # the scores are the contributions
        (term,) = present
        floor = max(floor, _kth_contribution(term, limit)) * (1.0 - _EPS)
        keep = term.contribution >= floor
        return _hits(namespace, *_cut(term.slots[keep], term.contribution[keep], limit), limit)
    scores, _ = _scratch.arrays(size)
    try:
        for term in present:  # query order: the sums are added in the reference's order
            np.add.at(scores, term.slots, term.contribution)  # (slots distinct: ``+=``)
        floor = max(floor, *(_kth_contribution(t, limit) for t in present))
        return _top(namespace, scores[:size], limit, floor * (1.0 - _EPS))
    finally:
        for term in present:
            scores[term.slots] = 0.0


def _fetch(sql: str, params: list) -> list[tuple]:
    """Rows of one read. On PostgreSQL the posting blobs come in binary format (half the
    bytes of hex-encoded ``bytea``, no decoding), through Django's error wrapping."""
    if connection.vendor != "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.fetchall()
    import psycopg

    connection.ensure_connection()
    with connection.wrap_database_errors, psycopg.Cursor(connection.connection) as cursor:
        cursor.execute(sql, params, binary=True)
        return cursor.fetchall()


def _top(namespace: str, scores, limit: int, floor: float = 0.0) -> list[Hit]:
    """The top ``limit`` of ``scores`` (slot-indexed) as hits, ties by ref. ``floor``, a
    score the ``limit``-th best is known to reach (0: none known), spares partitioning
    every match."""
    import numpy as np

    matched = np.flatnonzero(scores >= floor) if floor > 0 else np.flatnonzero(scores)
    return _hits(namespace, *_cut(matched, scores[matched], limit), limit)


def _cut(slots, scores, limit: int):
    """The ``limit`` best of ``scores`` and every one tied with the ``limit``-th."""
    import numpy as np

    if scores.size <= limit:
        return slots, scores
    kth = scores[np.argpartition(-scores, limit - 1)[:limit]].min()
    keep = scores >= kth
    return slots[keep], scores[keep]


def _hits(namespace: str, slots, scores, limit: int) -> list[Hit]:
    """Hits of the documents at ``slots`` with their ``scores``, best first, ties by
    ref, at most ``limit``."""
    refs: dict[int, str] = {}
    slots = slots.tolist()
    with connection.cursor() as cursor:
        for lo in range(0, len(slots), _CHUNK):
            chunk = slots[lo : lo + _CHUNK]
            sql, listed = _in_list(_REFS_SQL, chunk)
            cursor.execute(sql, [namespace, *listed])
            refs.update(cursor.fetchall())
    hits = [
        Hit(ref=refs[s], score=v) for s, v in zip(slots, scores.tolist(), strict=True) if s in refs
    ]
    hits.sort(key=lambda h: (-h.score, h.ref))
    return hits[:limit]


# --- writes ---------------------------------------------------------------------------


def _encode(packed: array, bucket: int) -> bytes:
    """The (slot, tf, dl) triples (flattened, slots ascending) of block ``bucket`` as
    stored: 4 bytes each (little-endian u2 offset of the slot in the bucket, one byte
    each for tf and dl) when every tf and dl fits in ``_NARROW_MAX``, else 12 (three
    little-endian u4). ``len(data) / count`` tells a block's format, so blocks of both
    kinds live side by side."""
    if max(packed[1::3], default=0) <= _NARROW_MAX and max(packed[2::3], default=0) <= _NARROW_MAX:
        flat = list(packed)
        base = bucket * BUCKET
        flat[0::3] = [slot - base for slot in flat[0::3]]
        return struct.pack("<" + "HBB" * (len(flat) // 3), *flat)
    if _BIG_ENDIAN:
        packed = array("I", packed)
        packed.byteswap()
    return packed.tobytes()


def _decode(data, count: int, bucket: int) -> array:
    """The (slot, tf, dl) triples of block ``bucket`` of ``count`` postings, flattened."""
    data = bytes(data)
    if len(data) == _COMPACT * count:
        packed = array("I", struct.unpack("<" + "HBB" * count, data))
        base = bucket * BUCKET
        packed[0::3] = array("I", [offset + base for offset in packed[0::3]])
        return packed
    if len(data) == _NARROW * count:
        return array("I", struct.unpack("<" + "IBB" * count, data))
    packed = array("I")
    packed.frombytes(data)
    if _BIG_ENDIAN:
        packed.byteswap()
    return packed


def new_revision() -> int:
    """A namespace's revision after a write: random, 63 bits, never 0 (0 is a namespace
    never written since migration 0012). Random rather than counted, so a write rolled
    back never leaves its number to be taken again by another state (a derived copy
    made inside that transaction stays unusable)."""
    return secrets.randbits(63) or 1


def _apply(namespace: str, changes: dict[str, str | None]) -> None:
    """Apply ``ref → body`` (``None`` removes) to one namespace, atomically."""
    if not changes:
        return
    stamp = connection.ops.adapt_datetimefield_value(timezone.now())
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            _LOCK_SQL,
            [namespace],
        )
        ns_id, documents, total, next_slot = cursor.fetchone()
        existing: dict[str, tuple[int, int, int, str]] = {}
        refs = list(changes)
        for lo in range(0, len(refs), _CHUNK):
            chunk = refs[lo : lo + _CHUNK]
            sql, listed = _in_list(_DOCS_SQL, chunk)
            cursor.execute(sql, [namespace, *listed])
            existing.update((row[0], row[1:]) for row in cursor.fetchall())
        if not existing and len(changes) >= _BULK and None not in changes.values():
            added, tokens = _insert_new(cursor, namespace, ns_id, next_slot, changes, stamp)
            cursor.execute(
                _STATS_SQL,
                [documents + added, total + tokens, next_slot + added, new_revision(), ns_id],
            )
            return
        # (term, bucket) → slot → (tf, dl), or None to drop the slot's posting
        edits: dict[tuple[str, int], dict[int, tuple[int, int] | None]] = defaultdict(dict)
        created, updated, deleted = [], [], []
        for ref, body in changes.items():
            old = existing.get(ref)
            if old is not None and old[3] == body:
                continue
            if old is not None:
                doc_id, slot, length, old_body = old
                for term in Counter(bm25.document_tokens(old_body)):
                    edits[(term, slot // BUCKET)][slot] = None
                total -= length
                if body is None:
                    documents -= 1
                    deleted.append(doc_id)
                    continue
            elif body is None:
                continue
            else:
                slot = next_slot
                next_slot += 1
                documents += 1
            words = bm25.document_tokens(body)
            dl = len(words)
            total += dl
            for term, tf in Counter(words).items():
                edits[(term, slot // BUCKET)][slot] = (tf, dl)
            if old is None:
                created.append([namespace, ref, body, slot, dl, stamp])
            else:
                updated.append((body, dl, stamp, old[0]))
        if edits:
            _write_blocks(cursor, ns_id, edits)
        if deleted:
            cursor.executemany(_DELETE_DOC_SQL, [[doc_id] for doc_id in deleted])
        if updated:
            cursor.executemany(_UPDATE_DOC_SQL, updated)
        if created:
            cursor.executemany(_INSERT_SQL, created)
        cursor.execute(
            _STATS_SQL,
            [documents, total, next_slot, new_revision(), ns_id],
        )


def _insert_new(cursor, namespace: str, ns_id: int, first: int, bodies: dict, stamp):
    """Documents none of which the namespace holds yet (a bulk load), at slots from
    ``first`` on: their postings built with numpy in one pass — every (term, slot)
    counted, grouped into blocks per (term, bucket) and encoded as ``_encode`` does —
    and written with one ``executemany`` per table. Returns (documents, tokens) added."""
    import numpy as np

    analysed = [bm25.document_tokens(body) for body in bodies.values()]
    lengths = np.fromiter(map(len, analysed), np.int64, len(analysed))
    vocabulary: dict[str, int] = {}
    ids = [vocabulary.setdefault(t, len(vocabulary)) for words in analysed for t in words]
    slots = np.repeat(np.arange(first, first + lengths.size, dtype=np.int64), lengths)
    keys, tf = np.unique(np.array(ids, np.int64) << 40 | slots, return_counts=True)
    terms, slots = keys >> 40, keys & ((1 << 40) - 1)
    dl, buckets = lengths[slots - first], slots // BUCKET
    starts = np.flatnonzero(np.r_[True, (terms[1:] != terms[:-1]) | (buckets[1:] != buckets[:-1])])
    ends = np.r_[starts[1:], keys.size]
    max_tf, min_dl = np.maximum.reduceat(tf, starts), np.minimum.reduceat(dl, starts)
    wide = np.maximum(np.maximum.reduceat(dl, starts), max_tf) > _NARROW_MAX
    data = _packed_blocks(slots, tf, dl, buckets, starts, ends, wide)
    words = list(vocabulary)
    rows = [
        [ns_id, words[term], bucket, count, high, low, blob]
        for term, bucket, count, high, low, blob in zip(
            terms[starts].tolist(), buckets[starts].tolist(), (ends - starts).tolist(),
            max_tf.tolist(), min_dl.tolist(), data, strict=True,
        )
    ]  # fmt: skip
    merged = []
    if first % BUCKET:  # the bucket the namespace's last slot is in may hold blocks already
        merged = [row for row in rows if row[2] == first // BUCKET]
        rows = [row for row in rows if row[2] != first // BUCKET]
        _merge_current(cursor, ns_id, first // BUCKET, merged)
        cursor.executemany(_UPSERT_SQL, merged)
    documents = [
        [namespace, ref, body, first + i, length, stamp]
        for i, (ref, body, length) in enumerate(
            zip(bodies, bodies.values(), lengths.tolist(), strict=True)
        )
    ]
    _insert_rows(cursor, _COPY_BLOCKS, _UPSERT_SQL, rows)  # (no block of theirs exists yet)
    _insert_rows(cursor, _COPY_DOCUMENTS, _INSERT_SQL, documents)
    return lengths.size, int(lengths.sum())


_COPY_BLOCKS = (
    "COPY core_searchpostingblock (namespace_id, term, bucket, count, max_tf, min_dl, data) "
    "FROM STDIN"
)
_COPY_DOCUMENTS = (
    "COPY core_searchdocument (namespace, ref, body, slot, length, updated_at) FROM STDIN"
)


def _insert_rows(cursor, copy_sql: str, insert_sql: str, rows: list[list]) -> None:
    """New rows: PostgreSQL ``COPY`` (one stream), else one ``executemany``."""
    if connection.vendor != "postgresql":
        cursor.executemany(insert_sql, rows)
        return
    with connection.wrap_database_errors, cursor.cursor.copy(copy_sql) as stream:
        for row in rows:
            stream.write_row(row)


def _packed_blocks(slots, tf, dl, buckets, starts, ends, wide) -> list[bytes]:
    """Each block's stored bytes (``_encode``'s formats): 4 bytes a posting, or 12 for a
    block whose tf or dl passes a byte."""
    import numpy as np

    compact = np.empty(slots.size, dtype=[("offset", "<u2"), ("tf", "u1"), ("dl", "u1")])
    compact["offset"] = slots - buckets * BUCKET
    compact["tf"], compact["dl"] = np.minimum(tf, 255), np.minimum(dl, 255)
    narrow = compact.tobytes()
    if wide.any():
        full = np.empty((slots.size, 3), dtype="<u4")
        full[:, 0], full[:, 1], full[:, 2] = slots, tf, dl
        broad = full.tobytes()
    return [
        broad[12 * lo : 12 * hi] if w else narrow[4 * lo : 4 * hi]
        for lo, hi, w in zip(starts.tolist(), ends.tolist(), wide.tolist(), strict=True)
    ]


def _merge_current(cursor, ns_id: int, bucket: int, rows: list[list]) -> None:
    """Prefix the blocks of ``rows`` in ``bucket`` with the postings already stored in
    that bucket (whose slots all come before the new ones), bounds widened."""
    at = {row[1]: row for row in rows if row[2] == bucket}
    terms = list(at)
    for lo in range(0, len(terms), _CHUNK):
        sql, listed = _in_list(_BLOCKS_SQL, terms[lo : lo + _CHUNK])
        cursor.execute(sql, [ns_id, bucket, *listed])
        for term, _, _, count, data in cursor.fetchall():
            row = at[term]
            packed = _decode(data, count, bucket)
            packed.extend(_decode(row[6], row[3], bucket))
            row[3] = len(packed) // 3
            row[4] = max(packed[1::3])
            row[5] = min(packed[2::3])
            row[6] = _encode(packed, bucket)


def _write_blocks(cursor, ns_id: int, edits) -> None:
    by_bucket: dict[int, list[str]] = defaultdict(list)
    for term, bucket in edits:
        by_bucket[bucket].append(term)
    current: dict[tuple[str, int], tuple[int, int, int, bytes]] = {}
    for bucket, terms in by_bucket.items():
        for lo in range(0, len(terms), _CHUNK):
            chunk = terms[lo : lo + _CHUNK]
            sql, listed = _in_list(_BLOCKS_SQL, chunk)
            cursor.execute(sql, [ns_id, bucket, *listed])
            current.update(((row[0], bucket), row[1:]) for row in cursor.fetchall())
    upserts, drops = [], []
    for key, slot_edits in edits.items():
        max_tf, min_dl, count, data = current.get(key, (0, 0, 0, None))
        packed = _decode(data, count, key[1]) if data is not None else array("I")
        if (
            None not in slot_edits.values()  # (identity first: no tuple equals None)
            and (not packed or min(slot_edits) > packed[-3])
            and (max_tf > 0 or not packed)  # bounds recorded (always, since migration 0009)
        ):  # the common case: new documents append to the block, the bounds only widen
            added = sorted(slot_edits.items())
            packed.extend([v for slot, (tf, dl) in added for v in (slot, tf, dl)])
            max_tf = max(max_tf, max(tf for _, (tf, _) in added))
            least = min(dl for _, (_, dl) in added)
            min_dl = min(min_dl, least) if min_dl else least
        else:  # a removal or replacement: merge, and recompute the bounds exactly
            merged = {packed[i]: (packed[i + 1], packed[i + 2]) for i in range(0, len(packed), 3)}
            for slot, value in slot_edits.items():
                if value is None:
                    merged.pop(slot, None)
                else:
                    merged[slot] = value
            packed = array("I")
            for slot in sorted(merged):
                packed.extend((slot, *merged[slot]))
            if merged:
                max_tf = max(tf for tf, _ in merged.values())
                min_dl = min(dl for _, dl in merged.values())
        if packed:
            upserts.append(
                [ns_id, key[0], key[1], len(packed) // 3, max_tf, min_dl, _encode(packed, key[1])]
            )
        elif data is not None:
            drops.append([ns_id, key[0], key[1]])
    if upserts:
        cursor.executemany(
            _UPSERT_SQL,
            upserts,
        )
    if drops:
        cursor.executemany(
            _DROP_SQL,
            drops,
        )


def rebuild(namespace: str | None = None) -> int:
    """Recompute slots, lengths, statistics and postings from the stored bodies (all
    namespaces when ``None``); returns the number of documents indexed."""
    indexed = 0
    with transaction.atomic(), connection.cursor() as cursor:
        if namespace is None:
            cursor.execute(_NAMES_SQL)
            names = sorted(row[0] for row in cursor.fetchall())
        else:
            names = [namespace]
        for name in names:
            cursor.execute(_ALL_DOCS_SQL, [name])
            docs = cursor.fetchall()
            for sql in (_DROP_NAMESPACE_SQL, _DROP_DOCS_SQL, _DROP_STATS_SQL):
                cursor.execute(sql, [name])
            index_many(name, docs)
            indexed += len(docs)
    return indexed
