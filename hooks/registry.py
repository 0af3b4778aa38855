"""Composition-root binding of installed hook providers, and execution profiles.

``settings.LOOPX_POST_WRITEBACK_HOOKS`` lists dotted paths of provider classes the
operator installed. This module imports them by path (it never names one), validates
each registration with ``hooks.contracts`` and returns them in stable ``hook_id`` order.
Installation proves only availability and contract compatibility — never authority.

A provider class declares:

* ``registration`` — the ``loopx_post_writeback_capability_hook_registration_v0`` packet;
* ``intent_contracts`` — ``{intent_kind: {"operations": [...], "payload_schema": {...}}}``;
* ``produce(self, hook_input: dict) -> dict`` — returns a
  ``loopx_post_writeback_hook_result_v0``; it receives only the public-safe input.
"""

import dataclasses
import functools
from dataclasses import dataclass

from django.conf import settings
from django.utils.module_loading import import_string

from hooks import contracts
from hooks.errors import ContractViolation
from loopx_site.core.canonical import digest_ref

MAX_INSTALLED = 32
# Per-phase ceilings (one committed receipt), reserved in hook_id order from the declared
# budgets (``hooks.dispatcher.plan_budgets``). The registry applies them too: a hook that
# would be past a ceiling in every phase it subscribes to is refused here, where the
# operator sees it, instead of failing ``dispatch_budget_exhausted`` on every settlement.
MAX_HOOKS_PER_PHASE = 8
MAX_PHASE_TIMEOUT_MS = 20000
MAX_PHASE_INTENTS = 64


@dataclass(frozen=True)
class InstalledHook:
    """One entry of the setting, validated. ``rejection`` is ``None`` when admitted."""

    position: int
    source: str
    hook_id: str | None
    registration: dict | None
    intent_contracts: dict
    provider: object | None
    rejection: str | None
    policy_version: str | None = None

    @property
    def valid(self) -> bool:
        return self.rejection is None

    @property
    def capability_id(self) -> str:
        if self.registration:
            return self.registration["capability_id"]
        return self.hook_id.split(".", 1)[0] if self.hook_id else ""

    @property
    def registration_digest(self) -> str:
        if not self.registration:
            return ""
        return contracts.registration_digest(
            self.registration,
            intent_contracts=self.intent_contracts,
            policy_version=self.policy_version,
        )

    def subscribes(self, event_kind: str) -> bool:
        """Rejected hooks with a usable id are kept so their failure is recorded."""
        if self.registration is None:
            return self.hook_id is not None
        return event_kind in self.registration["event_kinds"]

    def public(self) -> dict:
        return {
            "hook_id": self.hook_id,
            "capability_id": self.capability_id or None,
            "provider": self.source,
            "status": "installed" if self.valid else "rejected",
            "failure_code": None if self.valid else "registration_rejected",
            "reason": self.rejection,
            "registration": self.registration,
            "registration_digest": self.registration_digest or None,
        }


@dataclass(frozen=True)
class Registry:
    hooks: tuple[InstalledHook, ...]
    digest: str

    def admitted(self, *, allowlist: list[str] | None, event_kind: str) -> list[InstalledHook]:
        """Hooks to dispatch for one event, in ``hook_id`` order (rejected ones included)."""
        return [
            h
            for h in self.hooks
            if h.hook_id is not None
            and (allowlist is None or h.hook_id in allowlist)
            and h.subscribes(event_kind)
        ]


def _bind(position: int, source: str) -> InstalledHook:
    def rejected(reason: str, hook_id=None, registration=None) -> InstalledHook:
        return InstalledHook(position, source, hook_id, registration, {}, None, reason)

    if not isinstance(source, str) or not source:
        return rejected("provider:invalid_path")
    try:
        cls = import_string(source)
    except (ImportError, ValueError):
        return rejected("provider:not_importable")
    packet = getattr(cls, "registration", None)
    raw_id = packet.get("hook_id") if isinstance(packet, dict) else None
    hook_id = (
        raw_id if isinstance(raw_id, str) and contracts.QUALIFIED_RE.fullmatch(raw_id) else None
    )
    if not isinstance(cls, type) or not callable(getattr(cls, "produce", None)):
        return rejected("provider:not_a_provider", hook_id)
    intent_contracts = getattr(cls, "intent_contracts", None)
    try:
        registration = contracts.validate_registration(packet, intent_contracts=intent_contracts)
    except ContractViolation as exc:
        return rejected(exc.reason, hook_id)
    try:
        provider = cls()
    except Exception:  # a provider failing to build is isolated
        return rejected("provider:construction_failed", hook_id, registration)
    contracts_used = {k: intent_contracts[k] for k in registration["intent_kinds"]}
    policy = getattr(cls, "policy_version", None)
    policy = policy if isinstance(policy, str) else None
    return InstalledHook(
        position, source, hook_id, registration, contracts_used, provider, None, policy
    )


@functools.lru_cache(maxsize=16)
def _build(sources: tuple[str, ...]) -> Registry:
    bound = [_bind(i, s) for i, s in enumerate(sources[:MAX_INSTALLED])]
    bound += [
        InstalledHook(i, "", None, None, {}, None, "registry:too_many_installed")
        for i in range(MAX_INSTALLED, len(sources))
    ]
    counts: dict[str, int] = {}
    for hook in bound:
        if hook.hook_id:
            counts[hook.hook_id] = counts.get(hook.hook_id, 0) + 1
    final = []
    for hook in bound:
        if hook.hook_id and counts[hook.hook_id] > 1:
            hook = InstalledHook(
                hook.position,
                hook.source,
                hook.hook_id,
                None,
                {},
                None,
                "registration.hook_id:duplicate",
            )
        final.append(hook)
    final.sort(key=lambda h: (h.hook_id is None, h.hook_id or "", h.position))
    final = _within_phase_ceilings(final)
    digest = digest_ref(
        [
            {"hook_id": h.hook_id, "registration": h.registration, "rejection": h.rejection}
            for h in final
        ]
    )
    return Registry(hooks=tuple(final), digest=digest)


def _phase_ceiling(used: tuple[int, int, int], budget: dict) -> str | None:
    """Which ceiling one more hook with ``budget`` would pass (``None``: it fits)."""
    hooks, ms, intents = used
    if hooks + 1 > MAX_HOOKS_PER_PHASE:
        return "registry:phase:max_hooks"
    if ms + budget["timeout_ms"] > MAX_PHASE_TIMEOUT_MS:
        return "registry:phase:max_wall_time"
    if intents + budget["max_intents_per_dispatch"] > MAX_PHASE_INTENTS:
        return "registry:phase:max_intents"
    return None


def _within_phase_ceilings(hooks: list[InstalledHook]) -> list[InstalledHook]:
    """Refuse, in dispatch order, each valid hook that does not fit the phase ceilings of
    an event kind it subscribes to next to the hooks admitted before it: without an
    allowlist it would be ``dispatch_budget_exhausted`` on every such settlement."""
    used: dict[str, tuple[int, int, int]] = {}
    admitted = []
    for hook in hooks:
        if not hook.valid:
            admitted.append(hook)
            continue
        budget = hook.registration["budget"]
        kinds = hook.registration["event_kinds"]
        reason = next(
            (r for k in kinds if (r := _phase_ceiling(used.get(k, (0, 0, 0)), budget))), None
        )
        if reason is not None:
            admitted.append(dataclasses.replace(hook, provider=None, rejection=reason))
            continue
        for kind in kinds:
            hooks_n, ms, intents = used.get(kind, (0, 0, 0))
            used[kind] = (
                hooks_n + 1,
                ms + budget["timeout_ms"],
                intents + budget["max_intents_per_dispatch"],
            )
        admitted.append(hook)
    return admitted


def installed() -> Registry:
    """The registry bound from the current setting (cached per distinct setting value)."""
    sources = getattr(settings, "LOOPX_POST_WRITEBACK_HOOKS", []) or []
    return _build(tuple(str(s) for s in sources))


# -- execution profiles ---------------------------------------------------------------
@dataclass(frozen=True)
class Profile:
    name: str
    post_writeback_hooks_enabled: bool
    hook_allowlist: list[str] | None

    def public(self) -> dict:
        return {
            "profile": self.name,
            "post_writeback_hooks_enabled": self.post_writeback_hooks_enabled,
            "hook_allowlist": self.hook_allowlist,
        }


PROFILE_NAMES = ("default", "hooks_disabled")


def profile(name: str | None) -> Profile:
    """Built-in profiles. ``default`` enables the phase and admits every installed hook
    (or ``settings.LOOPX_POST_WRITEBACK_HOOK_ALLOWLIST`` when set); ``hooks_disabled``
    turns the phase off."""
    name = name or "default"
    if name == "hooks_disabled":
        return Profile(name, False, None)
    allowlist = getattr(settings, "LOOPX_POST_WRITEBACK_HOOK_ALLOWLIST", None)
    enabled = bool(getattr(settings, "LOOPX_POST_WRITEBACK_HOOKS_ENABLED", True))
    return Profile("default", enabled, sorted(allowlist) if allowlist is not None else None)
