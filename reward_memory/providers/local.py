"""The built-in ``local`` provider: documents in the project database, ranked by the
kernel's full-text index (SQLite FTS5 / PostgreSQL full-text search).

Each (binding scope, surface) is one full-text namespace, so a recall never crosses
corpora or surfaces. Writes are idempotent upserts keyed by resource ref.
"""

import hashlib
import json

from django.db import DatabaseError, connection, transaction

from loopx_site.core import clock
from loopx_site.core.canonical import digest_ref
from loopx_site.engines import embeddings, fulltext
from reward_memory.models import HYBRID, LEXICAL, LocalProviderDocument
from reward_memory.providers import base, hybrid


def namespace(binding: base.Binding, surface: str) -> str:
    """The full-text namespace of one binding scope and surface (no private ref in it)."""
    return f"reward_memory:{binding.scope_key[:32]}:{surface}"


def content_digest(content: bytes) -> str:
    return "sha256:" + hashlib.sha256(content).hexdigest()


class LocalProvider(base.Provider):
    provider_id = "local"

    def preflight(self, binding: base.Binding) -> base.Preflight:
        try:
            present = LocalProviderDocument.objects.filter(
                scope_key=binding.scope_key, recallable=True
            ).exists()
        except DatabaseError:
            return base.Preflight(
                status="unavailable", index_present=False, failure_kind="unavailable"
            )
        return base.Preflight(status="ready", index_present=present)

    def write(self, binding: base.Binding, item: base.ProviderWrite) -> base.WriteResult:
        now = clock.now()
        text = item.content.decode("utf-8")
        vector = embed(item.search_text)  # at write time: recall only embeds the query
        try:
            with transaction.atomic():
                doc, created = LocalProviderDocument.objects.select_for_update().get_or_create(
                    scope_key=binding.scope_key,
                    resource_ref=item.resource_ref,
                    defaults={
                        "surface": item.surface,
                        "content": text,
                        "content_digest": content_digest(item.content),
                        "recallable": item.recallable,
                        "embedding": vector,
                        "created_at": now,
                        "updated_at": now,
                    },
                )
                changed = doc.content != text or doc.recallable != item.recallable
                if not created and (changed or doc.embedding is None):
                    LocalProviderDocument.objects.filter(pk=doc.pk).update(
                        content=text,
                        content_digest=content_digest(item.content),
                        recallable=item.recallable,
                        embedding=vector,
                        updated_at=now,
                    )
                hybrid.bump(binding.scope_key, item.surface)
                ns = namespace(binding, item.surface)
                if item.recallable:
                    fulltext.index(ns, item.resource_ref, item.search_text)
                else:
                    fulltext.remove(ns, item.resource_ref)
        except DatabaseError:
            raise base.ProviderUnavailable("unavailable") from None
        return base.WriteResult(status="committed", resource_ref=item.resource_ref)

    #: the documents are rows of this database: a recall ranks with ``rank`` and reads
    #: the bytes back in the statement that reads the records (``selectors.recall_read``
    #: with ``documents_of=binding.scope_key``), the same rows ``recall`` returns
    in_database = True

    def rank(
        self, binding: base.Binding, *, surface: str, query: str, limit: int, ranking: str = LEXICAL
    ) -> list[str]:
        """The resource refs of the top ``limit`` hits, best first (no document read):
        the exact BM25's (``lexical``) or the exact fused ranking above the relevance
        floor (``hybrid``, ``reward_memory.providers.hybrid``)."""
        ns = namespace(binding, surface)
        try:
            if ranking == HYBRID:
                return hybrid.rank(ns, binding.scope_key, surface, query, limit)
            return [h.ref for h in fulltext.search(ns, query, limit=limit)]
        except DatabaseError:
            raise base.ProviderUnavailable("unavailable") from None

    def recall(
        self, binding: base.Binding, *, surface: str, query: str, limit: int
    ) -> list[base.RecallItem]:
        try:
            hits = fulltext.search(namespace(binding, surface), query, limit=limit)
            if not hits:
                return []
            docs = _recallable_contents(binding.scope_key, [h.ref for h in hits])
        except DatabaseError:
            raise base.ProviderUnavailable("unavailable") from None
        return [
            base.RecallItem(resource_ref=h.ref, content=docs[h.ref].encode("utf-8"), score=h.score)
            for h in hits
            if h.ref in docs
        ]

    def readback(self, binding: base.Binding, resource_ref: str) -> bytes | None:
        try:
            doc = (
                LocalProviderDocument.objects.filter(
                    scope_key=binding.scope_key, resource_ref=resource_ref
                )
                .only("content")
                .first()
            )
        except DatabaseError:
            raise base.ProviderUnavailable("unavailable") from None
        return None if doc is None else doc.content.encode("utf-8")

    def retire(self, binding: base.Binding, resource_ref: str) -> None:
        try:
            with transaction.atomic():
                docs = LocalProviderDocument.objects.filter(
                    scope_key=binding.scope_key, resource_ref=resource_ref
                )
                for doc in docs:
                    fulltext.remove(namespace(binding, doc.surface), resource_ref)
                    hybrid.bump(binding.scope_key, doc.surface)
                docs.update(recallable=False, updated_at=clock.now())
        except DatabaseError:
            raise base.ProviderUnavailable("unavailable") from None


def _recallable_contents(scope_key: str, refs: list[str]) -> dict[str, str]:
    """``resource_ref → content`` of the recallable documents among ``refs``: one plain
    statement (every recall reads its hits back; the ORM's query building cost more
    than the read)."""
    qn = connection.ops.quote_name
    sql = (
        f"SELECT resource_ref, content FROM {qn(LocalProviderDocument._meta.db_table)} "  # noqa: S608 - quoted model name
        "WHERE scope_key = %s AND recallable = %s "
        f"AND resource_ref IN ({', '.join(['%s'] * len(refs))})"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [scope_key, True, *refs])
        return dict(cursor.fetchall())


def embed(text: str) -> bytes:
    """The stored vector of a document's searchable text."""
    return embeddings.to_bytes(embeddings.embed([text])[0])


def backfill_embeddings(*, batch: int = 500, track=lambda rows, **_: rows) -> int:
    """Compute the vector of every document that has none (documents written before
    hybrid ranking existed); returns how many were filled. Idempotent."""
    filled = 0
    pending = LocalProviderDocument.objects.filter(embedding__isnull=True).order_by("pk")
    ids = list(pending.values_list("pk", flat=True))
    for lo in track(range(0, len(ids), batch), desc="embedding", unit="batch"):
        rows = LocalProviderDocument.objects.filter(pk__in=ids[lo : lo + batch])
        for pk, scope_key, surface, content in rows.values_list(
            "pk", "scope_key", "surface", "content"
        ):
            with transaction.atomic():
                done = LocalProviderDocument.objects.filter(pk=pk, embedding__isnull=True).update(
                    embedding=embed(_searchable(content)), updated_at=clock.now()
                )
                if done:
                    hybrid.bump(scope_key, surface)
            filled += done
    return filled


def _searchable(content: str) -> str:
    """The text a document was indexed under: an activated record's content is its
    canonical JSON, indexed by its ``summary``; other content is indexed as it is."""
    try:
        document = json.loads(content)
    except ValueError:
        return content
    summary = document.get("summary") if isinstance(document, dict) else None
    return summary if isinstance(summary, str) else content


def public_ref(resource_ref: str) -> str:
    return digest_ref(resource_ref)
