"""The shared full-text index: exact BM25 per namespace, the same on SQLite and PostgreSQL.

Documents live in namespaces (e.g. one per corpus); a search never crosses namespaces,
and its statistics (document count, average length, document frequencies) are the
namespace's own. The ranking is defined once, in ``loopx_site.core.bm25``; ``search``
returns exactly that ranking's top-k (ties broken by ``ref``) — no token is dropped and
no match is left unranked, whatever the size of the namespace.

Storage (plain tables, the database is the only copy):

- ``SearchNamespace``: N, total length and the next dense slot of each namespace. Every
  write locks this row first (an upsert), so writers of one namespace serialise and the
  statistics always agree with the postings.
- ``SearchDocument``: ref, body, slot and length of each document.
- ``SearchPostingBlock``: per (namespace, term, slot range of ``BUCKET``) one packed
  blob of (slot, tf, dl) triples.

A search reads the namespace row and the query terms' blocks in one statement (one
snapshot), scores every matching document with vectorised arithmetic (numpy, imported
on first search), and looks up the refs of the top-k and of anything tied with the k-th.
The cost grows with the query terms' posting counts (12 bytes each), not with per-row
work, which is why an exact ranking stays within milliseconds at 100k documents.

Callers keep their own lifecycle filters: remove a document when it stops being
recallable.
"""

import sys
from array import array
from collections import Counter, defaultdict
from collections.abc import Iterable
from contextlib import contextmanager
from dataclasses import dataclass

from django.db import connection, transaction

from loopx_site.core import bm25, clock
from loopx_site.core.models import SearchDocument, SearchNamespace

MAX_QUERY_TOKENS = bm25.MAX_QUERY_TOKENS
BUCKET = 2048  # slots per posting block
_CHUNK = 500  # parameters per IN (...) list
_EPS = 1e-9  # relative slack of every bound: exactness never rests on rounding
_TINY = 1e-12
_BODY_COST = 400  # scoring one document from its body costs about this many postings
_VERIFY_ALWAYS = 64  # this few documents are always scored from their bodies
_ROUND_TRIP = 8192  # postings worth one more statement
_BIG_ENDIAN = sys.byteorder == "big"
assert array("I").itemsize == 4


_TERMS_SQL = (  # statistics and per-term df and bounds, from the covering index only
    "SELECT n.id, n.documents, n.tokens, n.next_slot, b.term, SUM(b.count), MAX(b.max_tf), "
    "MIN(b.min_dl) FROM core_searchnamespace n LEFT JOIN core_searchpostingblock b "
    "ON b.namespace_id = n.id AND b.term IN (?) WHERE n.name = %s "
    "GROUP BY n.id, n.documents, n.tokens, n.next_slot, b.term"
)
_POSTINGS_SQL = (
    "SELECT term, data FROM core_searchpostingblock WHERE namespace_id = %s AND term IN (?)"
)
_REFS_SQL = "SELECT slot, ref FROM core_searchdocument WHERE namespace = %s AND slot IN (?)"
_BODIES_SQL = (
    "SELECT slot, ref, length, body FROM core_searchdocument WHERE namespace = %s AND slot IN (?)"
)
_LOCK_SQL = (  # creates the namespace if needed and locks its row until commit
    "INSERT INTO core_searchnamespace (name, documents, tokens, next_slot) "
    "VALUES (%s, 0, 0, 0) ON CONFLICT (name) DO UPDATE SET name = excluded.name "
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
    "UPDATE core_searchnamespace SET documents = %s, tokens = %s, next_slot = %s WHERE id = %s"
)
_BLOCKS_SQL = (
    "SELECT term, max_tf, min_dl, data FROM core_searchpostingblock "
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


def _in_list(sql: str, n: int) -> str:
    """``sql`` with its ``IN (?)`` expanded to ``n`` placeholders (never any value)."""
    return sql.replace("(?)", "(" + ",".join(["%s"] * n) + ")")


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
    return SearchDocument.objects.filter(namespace=namespace).count()


def search(namespace: str, query: str, *, limit: int = 10) -> list[Hit]:
    """Exact BM25 top-``limit`` hits for ``query`` in ``namespace``, best first."""
    words = tokens(query)
    if not words or limit <= 0:
        return []
    with _snapshot():
        return _search(namespace, words, limit)


@contextmanager
def _snapshot():
    """Every statement of one search reads the same committed state.

    Inside a caller's transaction the search reads in the caller's snapshot. Otherwise,
    PostgreSQL: a REPEATABLE READ transaction (its first statement, so it also holds
    through PgBouncer's transaction pooling). SQLite: a deferred read transaction (WAL:
    one snapshot from its first read, no write lock; ``atomic()`` would begin IMMEDIATE
    and queue behind writers)."""
    if connection.in_atomic_block:
        yield
        return
    if connection.vendor == "postgresql":
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            yield
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
        finally:
            sqlite.execute("COMMIT")  # nothing written: ends the read transaction


class _Term:
    """One query term's statistics, bound and (once read) postings."""

    __slots__ = ("bound", "contribution", "df", "idf", "slots", "word")

    def __init__(self, word: str, df: int, max_tf: int, min_dl: int, documents: int, avgdl):
        self.word, self.df = word, df
        self.idf = bm25.idf(documents, df)
        # BM25 grows with tf and falls with dl: no posting of the term scores above this
        # (bounds not recorded: tf / (tf + K) < 1 for any posting)
        weight = bm25.weight(float(max_tf), float(min_dl), avgdl) if max_tf > 0 else bm25.K1_PLUS_1
        self.bound = self.idf * weight * (1.0 + _EPS) + _TINY
        self.slots = self.contribution = None


def _search(namespace: str, words: list[str], limit: int) -> list[Hit]:
    """MaxScore over whole posting lists: read the terms that can lift a document into the
    top-k (highest bound first) until the terms left unread cannot, together, reach the
    k-th best score found so far; then score exactly the few documents that still can
    (from their stored bodies) instead of reading the long lists of common terms."""
    import numpy as np

    rows = _fetch(_in_list(_TERMS_SQL, len(words)), [*words, namespace])
    found = {row[4]: row for row in rows if row[4] is not None}
    if not found:
        return []
    ns_id, documents, total, next_slot = rows[0][:4]
    avgdl = total / documents
    terms = {
        w: _Term(w, int(r[5]), int(r[6]), int(r[7]), documents, avgdl) for w, r in found.items()
    }
    exact = _Exact(namespace, [terms[w] for w in words if w in terms], avgdl)
    unread = sorted(terms.values(), key=lambda t: (-t.bound, t.df, t.word))
    partial = None  # per slot, the sum of the read terms' contributions
    while unread:
        if partial is not None:
            rest = sum(t.bound for t in unread)  # the most the unread terms can add
            candidates = np.flatnonzero(partial)  # every contribution is > 0
            kth = exact.kth(candidates, partial, limit)
            if rest < kth:  # no document outside the read lists can reach the k-th
                keep = candidates[partial[candidates] + rest >= kth]
                if keep.size * _BODY_COST <= unread[0].df or keep.size <= _VERIFY_ALWAYS:
                    exact.score(keep)
                    return exact.top(limit)
        batch = [unread.pop(0)]
        while unread and unread[0].df <= max(_ROUND_TRIP, sum(t.df for t in batch)):
            batch.append(unread.pop(0))
        _read_postings(ns_id, batch, avgdl)
        if unread:
            if partial is None:
                partial = np.zeros(next_slot, dtype=np.float64)
            for term in batch:
                partial[term.slots] += term.contribution
    return _top(namespace, _exact_scores(words, terms, next_slot), limit)


class _Exact:
    """Documents scored exactly from their stored bodies: the same analysis, statistics
    and operation order as the postings (and as ``bm25``), so the scores are identical."""

    def __init__(self, namespace: str, terms: list["_Term"], avgdl: float):
        self.namespace, self.terms, self.avgdl = namespace, terms, avgdl  # query order
        self.hits: dict[int, Hit] = {}

    def kth(self, candidates, partial, limit: int) -> float:
        """A lower bound (with slack) of the k-th best real score: the k-th best of the
        candidates' partial sums (every contribution is positive), raised by scoring the
        best ``limit`` candidates exactly; 0 when fewer than ``limit`` documents match."""
        import numpy as np

        if candidates.size < limit:
            return 0.0
        values = partial[candidates]
        best = np.argpartition(-values, limit - 1)[:limit]
        kth = float(values[best].min())
        self.score(candidates[best])
        if len(self.hits) >= limit:
            kth = max(kth, sorted(h.score for h in self.hits.values())[-limit])
        return kth * (1.0 - _EPS)

    def score(self, slots) -> None:
        todo = [int(s) for s in slots if int(s) not in self.hits]
        avgdl = self.avgdl
        with connection.cursor() as cursor:
            for lo in range(0, len(todo), _CHUNK):
                chunk = todo[lo : lo + _CHUNK]
                cursor.execute(_in_list(_BODIES_SQL, len(chunk)), [self.namespace, *chunk])
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


def _read_postings(ns_id: int, batch: list["_Term"], avgdl: float) -> None:
    import numpy as np

    blobs: dict[str, list[bytes]] = defaultdict(list)
    for word, data in _fetch(
        _in_list(_POSTINGS_SQL, len(batch)), [ns_id, *(t.word for t in batch)]
    ):
        blobs[word].append(data)
    k1, b, one_minus_b, k1_plus_1 = bm25.K1, bm25.B, bm25.ONE_MINUS_B, bm25.K1_PLUS_1
    for term in batch:
        postings = np.frombuffer(b"".join(blobs[term.word]), dtype="<u4").reshape(-1, 3)
        tf = postings[:, 1].astype(np.float64)
        dl = postings[:, 2].astype(np.float64)
        weight = tf * k1_plus_1 / (tf + k1 * (one_minus_b + b * dl / avgdl))
        term.slots = postings[:, 0].astype(np.intp)
        term.contribution = term.idf * weight


def _exact_scores(words: list[str], terms: dict[str, "_Term"], size: int):
    import numpy as np

    scores = np.zeros(size, dtype=np.float64)
    for word in words:  # query order: the sums are added in the reference's order
        term = terms.get(word)
        if term is not None:
            scores[term.slots] += term.contribution
    return scores


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


def _top(namespace: str, scores, limit: int) -> list[Hit]:
    import numpy as np

    matched = np.flatnonzero(scores)
    if matched.size > limit:
        values = scores[matched]
        kth = values[np.argpartition(-values, limit - 1)[:limit]].min()
        matched = matched[values >= kth]  # the top-k and everything tied with the k-th
    refs: dict[int, str] = {}
    slots = [int(s) for s in matched]
    with connection.cursor() as cursor:
        for lo in range(0, len(slots), _CHUNK):
            chunk = slots[lo : lo + _CHUNK]
            cursor.execute(
                _in_list(_REFS_SQL, len(chunk)),
                [namespace, *chunk],
            )
            refs.update(cursor.fetchall())
    hits = [Hit(ref=refs[s], score=float(scores[s])) for s in slots if s in refs]
    hits.sort(key=lambda h: (-h.score, h.ref))
    return hits[:limit]


# --- writes ---------------------------------------------------------------------------


def _encode(packed: array) -> bytes:
    if _BIG_ENDIAN:
        packed = array("I", packed)
        packed.byteswap()
    return packed.tobytes()


def _decode(data) -> array:
    """(slot, tf, dl) triples, flattened, slots ascending."""
    packed = array("I")
    packed.frombytes(bytes(data))
    if _BIG_ENDIAN:
        packed.byteswap()
    return packed


def _apply(namespace: str, changes: dict[str, str | None]) -> None:
    """Apply ``ref → body`` (``None`` removes) to one namespace, atomically."""
    if not changes:
        return
    now = clock.now()
    stamp = connection.ops.adapt_datetimefield_value(now)
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
            cursor.execute(
                _in_list(_DOCS_SQL, len(chunk)),
                [namespace, *chunk],
            )
            existing.update((row[0], row[1:]) for row in cursor.fetchall())
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
                updated.append((old[0], body, dl))
        if edits:
            _write_blocks(cursor, ns_id, edits)
        if deleted:
            SearchDocument.objects.filter(id__in=deleted).delete()
        for doc_id, body, dl in updated:
            SearchDocument.objects.filter(id=doc_id).update(body=body, length=dl, updated_at=now)
        if created:
            cursor.executemany(_INSERT_SQL, created)
        cursor.execute(
            _STATS_SQL,
            [documents, total, next_slot, ns_id],
        )


def _write_blocks(cursor, ns_id: int, edits) -> None:
    by_bucket: dict[int, list[str]] = defaultdict(list)
    for term, bucket in edits:
        by_bucket[bucket].append(term)
    current: dict[tuple[str, int], tuple[int, int, bytes]] = {}
    for bucket, terms in by_bucket.items():
        for lo in range(0, len(terms), _CHUNK):
            chunk = terms[lo : lo + _CHUNK]
            cursor.execute(
                _in_list(_BLOCKS_SQL, len(chunk)),
                [ns_id, bucket, *chunk],
            )
            current.update(((row[0], bucket), row[1:]) for row in cursor.fetchall())
    upserts, drops = [], []
    for key, slot_edits in edits.items():
        max_tf, min_dl, data = current.get(key, (0, 0, None))
        packed = _decode(data) if data is not None else array("I")
        if (
            all(v is not None for v in slot_edits.values())
            and (not packed or min(slot_edits) > packed[-3])
            and (max_tf > 0 or not packed)  # bounds recorded (always, since migration 0009)
        ):  # the common case: new documents append to the block, the bounds only widen
            for slot in sorted(slot_edits):
                tf, dl = slot_edits[slot]
                packed.extend((slot, tf, dl))
                max_tf = max(max_tf, tf)
                min_dl = min(min_dl, dl) if min_dl else dl
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
                [ns_id, key[0], key[1], len(packed) // 3, max_tf, min_dl, _encode(packed)]
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
    names = (
        [namespace]
        if namespace is not None
        else list(SearchDocument.objects.values_list("namespace", flat=True).distinct())
    )
    indexed = 0
    with transaction.atomic():
        for name in names:
            docs = list(
                SearchDocument.objects.filter(namespace=name)
                .order_by("id")
                .values_list("ref", "body")
            )
            SearchDocument.objects.filter(namespace=name).delete()
            SearchNamespace.objects.filter(name=name).delete()
            index_many(name, docs)
            indexed += len(docs)
    return indexed
