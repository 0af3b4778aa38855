"""The ``openviking`` Reward Memory provider: an HTTP adapter for an OpenViking server.

OpenViking is optional and external: LoopX talks to ``openviking-server`` over HTTP only
(``loopx_site.openviking_http``) and never imports its code. Settings: ``OPENVIKING_BASE_URL``,
``OPENVIKING_API_KEY``, ``OPENVIKING_USER_ID``, ``OPENVIKING_TIMEOUT_SECONDS`` (see
``.env.example``); without a base URL and user id every operation is the fail-open
``not_installed`` condition.

Identity boundary (OpenViking ≥ 0.4.19): each Goal-scoped Agent writes only under its own
actor peer, ``viking://user/{user}/peers/{peer}/memories/…``, where the peer is derived
deterministically from ``(goal_id, agent_id)`` (``actor_peer_for``). Before any request:

* a ``viking://agent/…`` target (any letter case) is refused;
* a target outside ``…/peers/{peer}/memories/`` (e.g. a user path without a peer) is
  refused;
* ``Binding.actor_peer_id`` must be present and equal the URI's peer; it is sent as the
  ``X-OpenViking-Actor-Peer`` header on every call, so the server enforces the same view.

Refusals raise ``ProviderUnavailable("forbidden")`` with zero requests sent (an
unconfigured adapter reports ``not_installed`` first: it sends nothing either). Transport
failures map to the interface's bounded kinds (``unavailable``, ``timed_out``,
``invalid_response``, ``forbidden``); an ambiguous write (timed out after the bytes were
sent) is a ``pending`` commit. Retries are bounded and resend the identical request (the
same deterministic resource ref and bytes), so a retry never creates a second record.

Readback is exact: the text the server returns for the file must encode to the very
bytes written. Retire deletes the file and waits (bounded) for the server's task, so a
retired record stops appearing in scoped finds.
"""

from __future__ import annotations

from dataclasses import dataclass

import loopx_site.openviking_http as ov
from reward_memory.providers import base

RESOURCE_SUFFIX = ".md"
RETIRE_WAIT_SECONDS = 10.0
DEFAULT_TIMEOUT_SECONDS = 10.0
MAX_FIND_LIMIT = 50


def settings_from_django() -> ov.Settings:
    from django.conf import settings

    return ov.Settings(
        base_url=getattr(settings, "OPENVIKING_BASE_URL", "") or "",
        api_key=getattr(settings, "OPENVIKING_API_KEY", "") or "",
        user_id=getattr(settings, "OPENVIKING_USER_ID", "") or "",
        timeout_seconds=float(
            getattr(settings, "OPENVIKING_TIMEOUT_SECONDS", DEFAULT_TIMEOUT_SECONDS)
        ),
    )


@dataclass(frozen=True)
class PreflightReport:
    """What ``preflight_report`` learned (public-safe: no URL, key or scope ref)."""

    status: str
    failure_kind: str | None
    server_version: str | None
    version_supported: bool


class OpenVikingProvider(base.Provider):
    provider_id = "openviking"

    def __init__(self, settings: ov.Settings | None = None, *, sleep=None):
        self._settings = settings
        self._sleep = sleep

    # -- configuration ------------------------------------------------------------------
    @property
    def settings(self) -> ov.Settings:
        return self._settings if self._settings is not None else settings_from_django()

    def _client(self) -> ov.Client:
        settings = self.settings
        if not settings.configured:
            raise base.ProviderUnavailable("not_installed")
        if self._sleep is not None:
            return ov.Client(settings, sleep=self._sleep)
        return ov.Client(settings)

    # -- identity -------------------------------------------------------------------------
    def actor_peer_for(self, goal_id: str, agent_id: str) -> str | None:
        """The deterministic OpenViking peer of one Goal-scoped Agent."""
        return ov.peer_token(goal_id, agent_id)

    def resource_ref(self, binding: base.Binding, *, surface: str, key: str) -> str:
        return f"{binding.scope_ref.rstrip('/')}/{surface}/{key}{RESOURCE_SUFFIX}"

    def _checked(self, binding: base.Binding, uri: str) -> tuple[str, str]:
        """(uri, peer) after the private-target rule; refusals send nothing."""
        try:
            ov.check_private_target(
                binding.scope_ref,
                actor_peer_id=binding.actor_peer_id,
                user_id=self.settings.user_id or None,
            )
            ov.check_private_target(
                uri, actor_peer_id=binding.actor_peer_id, user_id=self.settings.user_id or None
            )
        except ov.TargetRefused:
            raise base.ProviderUnavailable("forbidden") from None
        scope = binding.scope_ref.rstrip("/")
        if uri != scope and not uri.startswith(scope + "/"):
            raise base.ProviderUnavailable("forbidden")
        return uri, binding.actor_peer_id

    # -- interface ----------------------------------------------------------------------
    def preflight(self, binding: base.Binding) -> base.Preflight:
        report = self.preflight_report(binding)
        if report.status != "ready":
            return base.Preflight(
                status=report.status, index_present=False, failure_kind=report.failure_kind
            )
        try:
            client = self._client()
            uri, peer = self._checked(binding, binding.scope_ref.rstrip("/"))
            hits = client.find("reward memory", target_uri=uri, peer=peer, limit=1)
        except base.ProviderUnavailable as exc:
            return base.Preflight(status="unavailable", index_present=False, failure_kind=exc.kind)
        except ov.OpenVikingError as exc:
            if exc.status == 404 or exc.code == "NOT_FOUND":
                return base.Preflight(status="ready", index_present=False)
            return base.Preflight(status="unavailable", index_present=False, failure_kind=exc.kind)
        return base.Preflight(status="ready", index_present=bool(hits))

    def preflight_report(self, binding: base.Binding | None = None) -> PreflightReport:
        """``/health`` and the server version (≥ 0.4.19); read-only, never writes."""
        try:
            client = self._client()
            if binding is not None:
                self._checked(binding, binding.scope_ref.rstrip("/"))
            health = client.health()
        except base.ProviderUnavailable as exc:
            return PreflightReport("unavailable", exc.kind, None, False)
        except ov.OpenVikingError as exc:
            return PreflightReport("unavailable", exc.kind, None, False)
        raw_version = health.get("version")
        version = ov.parse_version(raw_version)
        public_version = ".".join(map(str, version)) if version else None
        if health.get("healthy") is False or health.get("status") not in (None, "ok"):
            return PreflightReport("unavailable", "unavailable", public_version, False)
        if version is None:
            return PreflightReport("incomplete", "invalid_response", None, False)
        if version < ov.MIN_SERVER_VERSION:
            return PreflightReport("incomplete", "not_installed", public_version, False)
        user = health.get("user_id")
        if isinstance(user, str) and self.settings.user_id and user != self.settings.user_id:
            return PreflightReport("incomplete", "forbidden", public_version, True)
        return PreflightReport("ready", None, public_version, True)

    def write(self, binding: base.Binding, item: base.ProviderWrite) -> base.WriteResult:
        client = self._client()
        uri, peer = self._checked(binding, item.resource_ref)
        try:
            text = item.content.decode("utf-8")
        except UnicodeDecodeError:
            raise base.ProviderUnavailable("invalid_response") from None
        try:
            try:
                result = client.write(uri, text, peer=peer, mode="replace")
            except ov.OpenVikingError as exc:
                if not (exc.status == 404 or exc.code == "NOT_FOUND"):
                    raise
                try:
                    result = client.write(uri, text, peer=peer, mode="create")
                except ov.OpenVikingError as created:
                    if created.status != 409:
                        raise
                    # Created concurrently (e.g. by an earlier attempt): replace it.
                    result = client.write(uri, text, peer=peer, mode="replace")
        except ov.OpenVikingError as exc:
            if exc.kind == ov.TIMED_OUT:
                # The bytes may have landed: an ambiguous commit, retried with the same ref.
                return base.WriteResult(status="pending", resource_ref=item.resource_ref)
            raise base.ProviderUnavailable(exc.kind) from None
        if result.get("uri") not in (None, uri):
            raise base.ProviderUnavailable("invalid_response")
        if result.get("vector_status") not in (None, "complete", "skipped"):
            return base.WriteResult(status="pending", resource_ref=item.resource_ref)
        return base.WriteResult(status="committed", resource_ref=item.resource_ref)

    def recall(
        self, binding: base.Binding, *, surface: str, query: str, limit: int
    ) -> list[base.RecallItem]:
        target = f"{binding.scope_ref.rstrip('/')}/{surface}"
        client = self._client()
        uri, peer = self._checked(binding, target)
        try:
            hits = client.find(
                query, target_uri=uri, peer=peer, limit=max(1, min(limit, MAX_FIND_LIMIT))
            )
        except ov.OpenVikingError as exc:
            if exc.status == 404 or exc.code == "NOT_FOUND":
                return []  # nothing was ever written on this surface
            raise base.ProviderUnavailable(exc.kind) from None
        items = []
        for hit in hits:
            ref = hit["uri"]
            name = ref.rsplit("/", 1)[-1]
            if not ref.startswith(uri + "/") or name.startswith(".") or "/" in ref[len(uri) + 1 :]:
                continue  # directory summaries and anything outside the exact surface
            content = self.readback(binding, ref)
            if content is not None:
                items.append(base.RecallItem(resource_ref=ref, content=content, score=hit["score"]))
            if len(items) >= limit:
                break
        return items

    def readback(self, binding: base.Binding, resource_ref: str) -> bytes | None:
        client = self._client()
        uri, peer = self._checked(binding, resource_ref)
        try:
            text = client.read(uri, peer=peer)
        except ov.OpenVikingError as exc:
            raise base.ProviderUnavailable(exc.kind) from None
        return None if text is None else text.encode("utf-8")

    def retire(self, binding: base.Binding, resource_ref: str) -> None:
        client = self._client()
        uri, peer = self._checked(binding, resource_ref)
        try:
            task_id = client.delete(uri, peer=peer)
            if task_id is not None and not client.wait_task(
                task_id, deadline_seconds=RETIRE_WAIT_SECONDS
            ):
                raise base.ProviderUnavailable("timed_out")
        except ov.OpenVikingError as exc:
            if exc.status == 404 or exc.code == "NOT_FOUND":
                return
            raise base.ProviderUnavailable(exc.kind) from None
