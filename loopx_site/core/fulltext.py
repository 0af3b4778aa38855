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
from dataclasses import dataclass

from django.db import connection, transaction

from loopx_site.core import bm25, clock
from loopx_site.core.models import SearchDocument, SearchNamespace

MAX_QUERY_TOKENS = bm25.MAX_QUERY_TOKENS
BUCKET = 2048  # slots per posting block
_CHUNK = 500  # parameters per IN (...) list
_BIG_ENDIAN = sys.byteorder == "big"
assert array("I").itemsize == 4


_SEARCH_SQL = (  # one statement, so statistics and postings come from one snapshot
    "SELECT n.documents, n.tokens, n.next_slot, b.term, b.data FROM core_searchnamespace n "
    "LEFT JOIN core_searchpostingblock b ON b.namespace_id = n.id AND b.term IN (?) "
    "WHERE n.name = %s"
)
_REFS_SQL = "SELECT slot, ref FROM core_searchdocument WHERE namespace = %s AND slot IN (?)"
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
    "SELECT term, data FROM core_searchpostingblock "
    "WHERE namespace_id = %s AND bucket = %s AND term IN (?)"
)
_UPSERT_SQL = (
    "INSERT INTO core_searchpostingblock (namespace_id, term, bucket, count, data) "
    "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (namespace_id, term, bucket) "
    "DO UPDATE SET count = excluded.count, data = excluded.data"
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
    rows = _fetch(_in_list(_SEARCH_SQL, len(words)), [*words, namespace])
    blobs: dict[str, list[bytes]] = defaultdict(list)
    for row in rows:
        if row[3] is not None:
            blobs[row[3]].append(row[4])
    if not blobs:
        return []
    documents, total, next_slot = rows[0][0], rows[0][1], rows[0][2]
    scores = _scores(words, blobs, documents, total / documents, next_slot)
    return _top(namespace, scores, limit)


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


def _scores(words, blobs, documents: int, avgdl: float, size: int):
    import numpy as np

    k1, b, one_minus_b, k1_plus_1 = bm25.K1, bm25.B, bm25.ONE_MINUS_B, bm25.K1_PLUS_1
    scores = np.zeros(size, dtype=np.float64)
    for word in words:  # query order: the sums are added in the reference's order
        parts = blobs.get(word)
        if not parts:
            continue
        postings = np.frombuffer(b"".join(parts), dtype="<u4").reshape(-1, 3)
        slots = postings[:, 0]
        tf = postings[:, 1].astype(np.float64)
        dl = postings[:, 2].astype(np.float64)
        weight = tf * k1_plus_1 / (tf + k1 * (one_minus_b + b * dl / avgdl))
        scores[slots] += bm25.idf(documents, int(slots.size)) * weight
    return scores


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
    current: dict[tuple[str, int], bytes] = {}
    for bucket, terms in by_bucket.items():
        for lo in range(0, len(terms), _CHUNK):
            chunk = terms[lo : lo + _CHUNK]
            cursor.execute(
                _in_list(_BLOCKS_SQL, len(chunk)),
                [ns_id, bucket, *chunk],
            )
            current.update(((term, bucket), data) for term, data in cursor.fetchall())
    upserts, drops = [], []
    for key, slot_edits in edits.items():
        data = current.get(key)
        packed = _decode(data) if data is not None else array("I")
        if all(v is not None for v in slot_edits.values()) and (
            not packed or min(slot_edits) > packed[-3]
        ):  # the common case: new documents append to the block
            for slot in sorted(slot_edits):
                packed.extend((slot, *slot_edits[slot]))
        else:
            merged = {packed[i]: (packed[i + 1], packed[i + 2]) for i in range(0, len(packed), 3)}
            for slot, value in slot_edits.items():
                if value is None:
                    merged.pop(slot, None)
                else:
                    merged[slot] = value
            packed = array("I")
            for slot in sorted(merged):
                packed.extend((slot, *merged[slot]))
        if packed:
            upserts.append([ns_id, key[0], key[1], len(packed) // 3, _encode(packed)])
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
