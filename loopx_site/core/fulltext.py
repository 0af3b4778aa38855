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
  blob of (slot, tf, dl) triples, with the block's largest tf and smallest dl (its
  bounds, kept exact by every write; a covering index serves them without the blobs).

A search of a small namespace (under ``_SMALL`` documents at its last search) reads the
namespace row and the query terms' blocks in one statement and scores every match with
vectorised arithmetic (numpy, imported on first search). A larger one works inside one
snapshot (``_snapshot``): it reads the statistics and each term's df and bounds, then
the posting lists of the highest-bound (rarest) terms first; once the unread terms could
not, together, lift a document holding none of the read ones to the k-th best score
found so far, the documents that still can (each bounded by its own length and the
tokens the read terms leave) are scored exactly from their stored bodies, best bound
first, until none left can (``_Exact.best_first``). A common term's long list is read
only when that is cheaper than scoring the documents that need it. Every bound has
slack (``_EPS``), and scores are computed with the reference's operations in its order,
so the result is the reference's top-k exactly, ties with the k-th included.

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
_BODY_COST = 150  # scoring one document from its body costs about this many postings
_VERIFY_ALWAYS = 64  # this few documents are always scored from their bodies
_ROUND_TRIP = 8192  # postings worth one more statement
_TABLE_MIN = 4096  # postings from which a weight table pays
_TABLE_MAX = 1 << 16  # (tf, dl) pairs of one weight table
_SMALL = 50_000  # documents below which a search simply reads every query term's postings
_FIRST_BATCH = 32  # documents scored exactly in the first round of best_first
_BIG_ENDIAN = sys.byteorder == "big"
assert array("I").itemsize == 4


_TERMS_SQL = (  # statistics and per-term df and bounds, from the covering index only
    "SELECT n.id, n.documents, n.tokens, n.next_slot, b.term, SUM(b.count), MAX(b.max_tf), "
    "MIN(b.min_dl), MIN(b.max_tf) FROM core_searchnamespace n "
    "LEFT JOIN core_searchpostingblock b "
    "ON b.namespace_id = n.id AND b.term IN (?) WHERE n.name = %s "
    "GROUP BY n.id, n.documents, n.tokens, n.next_slot, b.term"
)
_SMALL_SQL = (  # one statement, so statistics and postings come from one snapshot
    "SELECT n.documents, n.tokens, n.next_slot, b.term, b.data FROM core_searchnamespace n "
    "LEFT JOIN core_searchpostingblock b ON b.namespace_id = n.id AND b.term IN (?) "
    "WHERE n.name = %s"
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
    rows = _fetch(_in_list(_SMALL_SQL, len(words)), [*words, namespace])
    if not rows:
        return []
    documents, total, next_slot = rows[0][:3]
    _remember(namespace, documents)
    blobs: dict[str, list[bytes]] = defaultdict(list)
    for row in rows:
        if row[3] is not None:
            blobs[row[3]].append(row[4])
    if not blobs:
        return []
    terms = {}
    for word, parts in blobs.items():
        data = b"".join(parts)
        term = terms[word] = _Term(word, len(data) // 12, 0, 0, documents, total / documents)
        _decode_postings(term, data, total / documents)
    return _top(namespace, _exact_scores(words, terms, next_slot), limit)


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
        except BaseException:
            if sqlite.in_transaction:
                sqlite.execute("ROLLBACK")
            raise
        sqlite.execute("COMMIT")  # nothing written: ends the read transaction


class _Term:
    """One query term's statistics, bound and (once read) postings."""

    __slots__ = ("bound", "contribution", "df", "dl", "idf", "max_tf", "slots", "tf", "word")

    def __init__(self, word: str, df: int, max_tf: int, min_dl: int, documents: int, avgdl):
        self.word, self.df, self.max_tf = word, df, max_tf
        self.idf = bm25.idf(documents, df)
        # BM25 grows with tf and falls with dl: no posting of the term scores above this
        # (bounds not recorded: tf / (tf + K) < 1 for any posting)
        weight = bm25.weight(float(max_tf), float(min_dl), avgdl) if max_tf > 0 else bm25.K1_PLUS_1
        self.bound = self.idf * weight * (1.0 + _EPS) + _TINY
        self.slots = self.tf = self.dl = self.contribution = None


def _search(namespace: str, words: list[str], limit: int) -> list[Hit]:
    """MaxScore over whole posting lists: read the terms that can lift a document into the
    top-k (highest bound first) until the terms left unread cannot, together, reach the
    k-th best score found so far; then score exactly the few documents that still can
    (from their stored bodies) instead of reading the long lists of common terms."""

    rows = _fetch(_in_list(_TERMS_SQL, len(words)), [*words, namespace])
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
    exact = _Exact(namespace, [terms[w] for w in words if w in terms], avgdl)
    unread = sorted(terms.values(), key=lambda t: (-t.bound, t.df, t.word))
    read: list[_Term] = []
    while unread:
        # Try to finish from the read lists when that costs less than reading the next
        # one: the per-document work is about the postings already read.
        if read and sum(t.df for t in read) <= unread[0].df:
            budget = max(_VERIFY_ALWAYS, unread[0].df // _BODY_COST)
            if exact.best_first(read, unread, avgdl, next_slot, limit, budget):
                return exact.top(limit)
        batch = [unread.pop(0)]
        while unread and unread[0].df <= max(_ROUND_TRIP, sum(t.df for t in batch)):
            batch.append(unread.pop(0))
        _read_postings(ns_id, batch, avgdl)
        read.extend(batch)
    return _top(namespace, _exact_scores(words, terms, next_slot), limit)


def _best(read: list["_Term"], values) -> list[int]:
    """Per read term, the slots of its ``_FIRST_BATCH`` highest ``values``."""
    import numpy as np

    best = []
    for term, v in zip(read, values, strict=True):
        top = (
            term.slots
            if v.size <= _FIRST_BATCH
            else term.slots[np.argpartition(-v, _FIRST_BATCH - 1)[:_FIRST_BATCH]]
        )
        best.extend(top.tolist())
    return best


def _bounds(read: list["_Term"], unread: list["_Term"], avgdl: float, size: int):
    """Per read term, for each document holding it: its partial score (the read terms'
    contributions: a lower bound of its real score, every contribution being positive)
    and an upper bound of its real score: the partial score plus, per unread term,
    ``idf · w(min(max_tf, tokens left), dl)`` with the document's own ``dl`` and the
    tokens the read terms leave. The upper bounds have slack, so none is below the real
    score whatever the rounding."""
    import numpy as np

    k1, b, one_minus_b, k1_plus_1 = bm25.K1, bm25.B, bm25.ONE_MINUS_B, bm25.K1_PLUS_1
    partial = np.zeros(size, dtype=np.float64)  # only the read terms' slots are touched
    tf_read = np.zeros(size, dtype=np.int64)
    for term in read:
        partial[term.slots] += term.contribution
        tf_read[term.slots] += term.tf
    top_dl = max(int(t.dl.max()) for t in read)
    table = None
    if (top_dl + 1) ** 2 <= _TABLE_MAX:  # the unread terms' ceiling per (tokens left, dl)
        room, dl = np.meshgrid(
            np.arange(top_dl + 1, dtype=np.float64),
            np.arange(top_dl + 1, dtype=np.float64),
            indexing="ij",
        )
        length_part = k1 * (one_minus_b + b * dl / avgdl)
        table = np.zeros(room.shape, dtype=np.float64)
        for other in unread:
            tf = np.minimum(room, float(other.max_tf)) if other.max_tf > 0 else room
            table += other.idf * (tf * k1_plus_1 / (tf + length_part))
        table = table.ravel()
    out = []
    for term in read:
        values = partial[term.slots]
        left = term.dl - tf_read[term.slots]  # tokens the read terms leave
        if table is not None:
            left *= top_dl + 1
            left += term.dl
            ceiling = table[left]
        else:
            room = left.astype(np.float64)
            dl = term.dl.astype(np.float64)
            length_part = k1 * (one_minus_b + b * dl / avgdl)
            ceiling = np.zeros(values.size, dtype=np.float64)
            for other in unread:
                tf = np.minimum(room, float(other.max_tf)) if other.max_tf > 0 else room
                ceiling += other.idf * (tf * k1_plus_1 / (tf + length_part))
        out.append((values, (values + ceiling) * (1.0 + _EPS) + _TINY))
    return out


class _Exact:
    """Documents scored exactly from their stored bodies: the same analysis, statistics
    and operation order as the postings (and as ``bm25``), so the scores are identical."""

    def __init__(self, namespace: str, terms: list["_Term"], avgdl: float):
        self.namespace, self.terms, self.avgdl = namespace, terms, avgdl  # query order
        self.hits: dict[int, Hit] = {}

    def best_first(self, read, unread, avgdl: float, size: int, limit: int, budget: int) -> bool:
        """Score documents holding a read term exactly, the highest upper bound first,
        until none left unscored can reach the k-th best exact score: then ``top`` is the
        exact top-k (``True``). ``False`` (reading the next posting list is the cheaper
        way on) once more than ``budget`` documents would need scoring, or while a
        document holding none of the read terms could still reach the k-th."""
        import numpy as np

        outside = sum(t.bound for t in unread)  # the most a document outside can score
        bounds = _bounds(read, unread, avgdl, size)
        self.score(_best(read, [v for v, _ in bounds]))  # real, high scores
        kth = self.kth(limit) * (1.0 - _EPS)
        if outside >= kth:  # (also when fewer than k documents are known)
            return False
        ceilings = [u for _, u in bounds]
        self.score(_best(read, ceilings))  # the most promising
        kth = max(kth, self.kth(limit) * (1.0 - _EPS))
        slots = np.concatenate([t.slots[u >= kth] for t, u in zip(read, ceilings, strict=True)])
        upper = np.concatenate([u[u >= kth] for u in ceilings])
        batch = _FIRST_BATCH
        while True:
            alive = upper >= kth
            slots, upper = slots[alive], upper[alive]
            if slots.size > len(read) * budget:  # (a document appears once per read term)
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

    blobs: dict[str, list[bytes]] = defaultdict(list)
    for word, data in _fetch(
        _in_list(_POSTINGS_SQL, len(batch)), [ns_id, *(t.word for t in batch)]
    ):
        blobs[word].append(data)
    for term in batch:
        _decode_postings(term, b"".join(blobs[term.word]), avgdl)


def _decode_postings(term: "_Term", data: bytes, avgdl: float) -> None:
    import numpy as np

    postings = np.frombuffer(data, dtype="<u4").reshape(-1, 3)
    term.slots = postings[:, 0]
    term.tf, term.dl = postings[:, 1], postings[:, 2]
    term.contribution = _contributions(term, avgdl)


def _contributions(term: "_Term", avgdl: float):
    """``idf · w(tf, dl)`` of every posting of ``term``, bit for bit the reference's
    operations: evaluated once per distinct (tf, dl) pair in a table when the pairs are
    few (short documents: always), elementwise otherwise."""
    import numpy as np

    k1, b, one_minus_b, k1_plus_1 = bm25.K1, bm25.B, bm25.ONE_MINUS_B, bm25.K1_PLUS_1
    if term.tf.size >= _TABLE_MIN:
        top_tf, top_dl = int(term.tf.max()), int(term.dl.max())
    if term.tf.size >= _TABLE_MIN and (top_tf + 1) * (top_dl + 1) <= _TABLE_MAX:
        tf, dl = np.meshgrid(
            np.arange(top_tf + 1, dtype=np.float64),
            np.arange(top_dl + 1, dtype=np.float64),
            indexing="ij",
        )
        table = term.idf * (tf * k1_plus_1 / (tf + k1 * (one_minus_b + b * dl / avgdl)))
        key = term.tf.astype(np.intp)
        key *= top_dl + 1
        key += term.dl
        return table.ravel()[key]
    tf = term.tf.astype(np.float64)
    dl = term.dl.astype(np.float64)
    return term.idf * (tf * k1_plus_1 / (tf + k1 * (one_minus_b + b * dl / avgdl)))


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
