"""The provider-neutral interface every Reward Memory provider implements.

LoopX owns class, scope, authority, lifecycle and receipts; a provider only stores
bytes under a resource ref, finds them again for a query, and reads them back exactly.
The same six operations fit the built-in ``local`` provider, the test double and an
HTTP adapter for an OpenViking server (resource refs are then ``viking://…`` URIs and
``Binding.actor_peer_id`` carries the explicit peer):

* ``resource_ref(binding, surface=, key=)`` — where a record lives (deterministic);
* ``preflight(binding)`` — read-only readiness (never writes);
* ``write(binding, item)`` — idempotent upsert; ``committed`` or ambiguous ``pending``;
* ``recall(binding, surface=, query=, limit=)`` — ranked items with their exact bytes;
* ``readback(binding, resource_ref)`` — the exact stored bytes, or ``None``;
* ``retire(binding, resource_ref)`` — stop returning it from recall;
* ``canary(binding, canary_ref=)`` — a fresh non-recallable write and exact readback;
* ``actor_peer_for(goal_id, agent_id)`` — the peer a (Goal, Agent) acts as (default none).

Callers check ``reward_memory.domain.uris.peer_matches`` before any call: a peer-scoped resource
is read or written only with the configured peer of the acting (Goal, Agent).

Failures to reach the provider raise ``ProviderUnavailable(kind)`` with a bounded kind;
callers fail open. Nothing a provider raises is ever copied into a receipt.
"""

import hashlib
from dataclasses import dataclass

from loopx_site.core import metrics
from loopx_site.core.canonical import digest_ref

FAILURE_KINDS = ("not_installed", "unavailable", "timed_out", "invalid_response", "forbidden")


class ProviderUnavailable(Exception):
    """The provider cannot be reached or refused the operation (bounded ``kind``)."""

    def __init__(self, kind: str = "unavailable"):
        super().__init__(kind)
        self.kind = kind if kind in FAILURE_KINDS else "unavailable"
        self.calls = 0  # provider calls a recall made before this one failed
        metrics.provider_failed(kind=self.kind)  # one failure, counted where it is raised


@dataclass(frozen=True)
class Binding:
    """A corpus's private provider binding; ``binding_ref`` is its public digest."""

    provider_id: str
    scope_ref: str
    actor_peer_id: str | None = None

    @property
    def binding_ref(self) -> str:
        return binding_ref(self.provider_id, self.scope_ref)

    @property
    def scope_key(self) -> str:
        return hashlib.sha256(self.scope_ref.encode("utf-8")).hexdigest()


def binding_ref(provider_id: str, scope_ref: str) -> str:
    return digest_ref({"provider_id": provider_id, "scope_ref": scope_ref})


@dataclass(frozen=True)
class ProviderWrite:
    resource_ref: str
    surface: str
    content: bytes
    search_text: str
    recallable: bool = True


@dataclass(frozen=True)
class WriteResult:
    status: str  # "committed" | "pending" (ambiguous commit)
    resource_ref: str


@dataclass(frozen=True)
class RecallItem:
    resource_ref: str
    content: bytes
    score: float


@dataclass(frozen=True)
class Preflight:
    status: str  # "ready" | "incomplete" | "unavailable"
    index_present: bool
    failure_kind: str | None = None


@dataclass(frozen=True)
class CanaryResult:
    written: bool
    readback_verified: bool
    resource_ref_digest: str


class Provider:
    """Base class; subclasses implement the storage operations."""

    provider_id = "abstract"
    #: ``True`` for a provider whose documents are rows of the project database
    #: (``local``): it also offers ``rank`` (refs only) and a recall reads the bytes in
    #: the statement that reads the records
    in_database = False

    def actor_peer_for(self, goal_id: str, agent_id: str) -> str | None:
        """The actor peer this provider derives for a (Goal, Agent) runtime identity, or
        ``None`` (no peer model). Overridden by peer-scoped providers (OpenViking); the
        configured allowlist row of a corpus takes precedence. Never from a URI."""
        return None

    def resource_ref(self, binding: Binding, *, surface: str, key: str) -> str:
        return f"{binding.scope_ref.rstrip('/')}/{surface}/{key}"

    def preflight(self, binding: Binding) -> Preflight:
        raise NotImplementedError

    def write(self, binding: Binding, item: ProviderWrite) -> WriteResult:
        raise NotImplementedError

    def recall(self, binding: Binding, *, surface: str, query: str, limit: int) -> list[RecallItem]:
        raise NotImplementedError

    def readback(self, binding: Binding, resource_ref: str) -> bytes | None:
        raise NotImplementedError

    def retire(self, binding: Binding, resource_ref: str) -> None:
        raise NotImplementedError

    def canary(self, binding: Binding, *, canary_ref: str) -> CanaryResult:
        """A fresh, non-recallable write and an exact byte readback."""
        key = hashlib.sha256(canary_ref.encode("utf-8")).hexdigest()
        resource = self.resource_ref(binding, surface="reward_memory.canary", key=key)
        content = f'{{"canary_ref":"{key}"}}'.encode()
        result = self.write(
            binding,
            ProviderWrite(
                resource_ref=resource,
                surface="reward_memory.canary",
                content=content,
                search_text="",
                recallable=False,
            ),
        )
        written = result.status == "committed"
        verified = written and self.readback(binding, resource) == content
        return CanaryResult(
            written=written,
            readback_verified=verified,
            resource_ref_digest=digest_ref(resource),
        )
