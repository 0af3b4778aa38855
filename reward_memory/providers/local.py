"""The built-in ``local`` provider: documents in the project database, ranked by the
kernel's full-text index (SQLite FTS5 / PostgreSQL full-text search).

Each (binding scope, surface) is one full-text namespace, so a recall never crosses
corpora or surfaces. Writes are idempotent upserts keyed by resource ref.
"""

import hashlib

from django.db import DatabaseError, connection, transaction

from loopx_site.core import clock
from loopx_site.core.canonical import digest_ref
from loopx_site.engines import fulltext
from reward_memory.models import LocalProviderDocument
from reward_memory.providers import base


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
                        "created_at": now,
                        "updated_at": now,
                    },
                )
                if not created and (doc.content != text or doc.recallable != item.recallable):
                    LocalProviderDocument.objects.filter(pk=doc.pk).update(
                        content=text,
                        content_digest=content_digest(item.content),
                        recallable=item.recallable,
                        updated_at=now,
                    )
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

    def rank(self, binding: base.Binding, *, surface: str, query: str, limit: int) -> list[str]:
        """The resource refs of the top ``limit`` hits, best first (no document read)."""
        try:
            return [h.ref for h in fulltext.search(namespace(binding, surface), query, limit=limit)]
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


def public_ref(resource_ref: str) -> str:
    return digest_ref(resource_ref)
