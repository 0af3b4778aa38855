"""A provider double for tests and evaluation fixtures (never selected in production:
it is only reachable while installed with ``providers.use``).

It stores bytes in memory, ranks by token overlap, records every call, and can be told
to be unavailable, to leave commits ambiguous, or to return different bytes on readback.
"""

import re
import threading

from reward_memory.providers import base

_TOKEN = re.compile(r"\w+", re.UNICODE)


class ProviderDouble(base.Provider):
    provider_id = "double"

    last_binding: base.Binding | None = None

    def __init__(self):
        self._lock = threading.Lock()
        self.documents: dict[tuple[str, str], dict] = {}
        self.calls: list[str] = []
        self.available = True
        self.commit_pending = False
        self.tamper_readback = False
        self.omit_from_recall = False

    # -- helpers for tests ------------------------------------------------------------
    def reset_calls(self) -> None:
        with self._lock:
            self.calls.clear()

    @property
    def call_count(self) -> int:
        return len(self.calls)

    def _enter(self, op: str) -> None:
        with self._lock:
            self.calls.append(op)
        if not self.available:
            raise base.ProviderUnavailable("unavailable")

    # -- interface --------------------------------------------------------------------
    def preflight(self, binding: base.Binding) -> base.Preflight:
        self._enter("preflight")
        present = any(
            scope == binding.scope_key and doc["recallable"]
            for (scope, _), doc in self.documents.items()
        )
        return base.Preflight(status="ready", index_present=present)

    def write(self, binding: base.Binding, item: base.ProviderWrite) -> base.WriteResult:
        self._enter("write")
        with self._lock:
            self.documents[(binding.scope_key, item.resource_ref)] = {
                "surface": item.surface,
                "content": item.content,
                "search_text": item.search_text,
                "recallable": item.recallable,
            }
        status = "pending" if self.commit_pending else "committed"
        return base.WriteResult(status=status, resource_ref=item.resource_ref)

    def recall(
        self, binding: base.Binding, *, surface: str, query: str, limit: int
    ) -> list[base.RecallItem]:
        self._enter("recall")
        self.last_binding = binding
        words = set(_TOKEN.findall(query.lower()))
        scored = []
        with self._lock:
            for (scope, ref), doc in self.documents.items():
                if scope != binding.scope_key or doc["surface"] != surface:
                    continue
                if not doc["recallable"] or self.omit_from_recall:
                    continue
                overlap = len(words & set(_TOKEN.findall(doc["search_text"].lower())))
                if overlap:
                    scored.append((-overlap, ref, doc["content"]))
        scored.sort()
        return [
            base.RecallItem(ref, self._bytes(content), float(-s)) for s, ref, content in scored
        ][:limit]

    def readback(self, binding: base.Binding, resource_ref: str) -> bytes | None:
        self._enter("readback")
        doc = self.documents.get((binding.scope_key, resource_ref))
        return None if doc is None else self._bytes(doc["content"])

    def retire(self, binding: base.Binding, resource_ref: str) -> None:
        self._enter("retire")
        with self._lock:
            doc = self.documents.get((binding.scope_key, resource_ref))
            if doc is not None:
                doc["recallable"] = False

    def _bytes(self, content: bytes) -> bytes:
        return content + b" " if self.tamper_readback else content
