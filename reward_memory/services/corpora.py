"""Stage 1: the corpus registry and standing policies (no provider writes)."""

from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import F

from loopx_site.core import clock
from loopx_site.core.canonical import digest_ref, nfc
from loopx_site.core.selectors import get_agent
from reward_memory import contracts as c
from reward_memory import providers, selectors
from reward_memory.domain import privacy, uris
from reward_memory.domain import validation as v
from reward_memory.errors import AREA, RewardMemoryError, invalid
from reward_memory.models import Corpus, StandingPolicy
from reward_memory.principals import Principal
from reward_memory.services import roles
from reward_memory.services.authority import refuse_forbidden_scopes

VISIBILITIES = privacy.VISIBILITIES  # private | goal_shared | project
RETENTION_CLASSES = ("standard", "short", "session")


def parse_corpus(document: Any) -> dict[str, Any]:
    """Validate a ``reward_memory_corpus_v0`` definition; returns the normalised one."""
    v.schema(document, c.CORPUS_SCHEMA, "corpus.schema_version")
    d = nfc(document)
    allowed = {
        "schema_version", "corpus_id", "memory_class", "owner", "reviewer", "authority_source",
        "maintenance", "project", "surfaces", "freshness", "privacy", "provider_binding",
        "agent_allowlist",
    }  # fmt: skip
    for key in d:
        if key not in allowed:
            raise invalid(f"corpus.{key}", "field not modelled by reward_memory_corpus_v0")
    corpus_id = v.identifier(d.get("corpus_id"), "corpus.corpus_id")
    memory_class = v.choice(d.get("memory_class"), "corpus.memory_class", c.MEMORY_CLASSES)
    actors = {k: v.ref(d.get(k), f"corpus.{k}") for k in ("owner", "reviewer", "authority_source")}
    maintenance = v.obj(d.get("maintenance"), "corpus.maintenance")
    retirement = v.ref(
        maintenance.get("retirement_authority"), "corpus.maintenance.retirement_authority"
    )
    project = v.project(d.get("project"), "corpus.project")
    surfaces = v.string_list(
        d.get("surfaces"), "corpus.surfaces", v.surface, required=True, min_items=1, max_items=16
    )
    if len(set(surfaces)) != len(surfaces):
        raise invalid("corpus.surfaces", "surfaces must be distinct")
    freshness = _freshness_policy(d, memory_class)
    corpus_privacy = _corpus_privacy(d)
    provider = _provider_binding(d, corpus_id)
    allowlist, peers = _corpus_allowlist(d)
    _check_visibility(corpus_privacy["visibility"], allowlist)
    return {
        "corpus_id": corpus_id,
        "memory_class": memory_class,
        **actors,
        "retirement_authority": retirement,
        "project": project,
        "surfaces": surfaces,
        "freshness_policy": freshness,
        "privacy": corpus_privacy,
        **provider,
        "agent_allowlist": allowlist,
        "agent_peers": peers,
    }


def _freshness_policy(d: dict[str, Any], memory_class: str) -> dict[str, Any]:
    """How old a source may be (required for the classes that age) and whether it must
    be the current revision (default yes)."""
    freshness = v.obj(d.get("freshness"), "corpus.freshness", required=False) or {}
    max_age = v.integer(
        freshness.get("max_source_age_days"),
        "corpus.freshness.max_source_age_days",
        minimum=1,
        maximum=3650,
        required=False,
    )
    if memory_class in c.FRESHNESS_REQUIRED_CLASSES and max_age is None:
        raise invalid(
            "corpus.freshness.max_source_age_days",
            f"a {memory_class} corpus must declare max_source_age_days",
        )
    require_current = v.boolean(
        freshness.get("require_current_revision"),
        "corpus.freshness.require_current_revision",
        required=False,
    )
    return {
        "max_source_age_days": max_age,
        "require_current_revision": True if require_current is None else require_current,
    }


def _corpus_privacy(d: dict[str, Any]) -> dict[str, Any]:
    """Visibility and retention class; raw content is never captured."""
    declared = v.obj(d.get("privacy"), "corpus.privacy", required=False) or {}
    visibility = v.choice(
        declared.get("visibility", "private"), "corpus.privacy.visibility", VISIBILITIES
    )
    retention = v.choice(
        declared.get("retention_class", "standard"),
        "corpus.privacy.retention_class",
        RETENTION_CLASSES,
    )
    if declared.get("raw_content_captured", False) is not False:
        raise invalid(
            "corpus.privacy.raw_content_captured", "raw content is never captured (false)"
        )
    return {"visibility": visibility, "retention_class": retention, "raw_content_captured": False}


def _provider_binding(d: dict[str, Any], corpus_id: str) -> dict[str, str]:
    """``provider_id`` (default ``local``) and a credential-free scope ref its provider
    accepts (default ``local:reward_memory/<corpus_id>``)."""
    binding = v.obj(d.get("provider_binding"), "corpus.provider_binding", required=False) or {}
    provider_id = v.choice(
        binding.get("provider_id", "local"),
        "corpus.provider_binding.provider_id",
        providers.KNOWN_PROVIDER_IDS,
    )
    scope_ref = binding.get("scope_ref") or f"local:reward_memory/{corpus_id}"
    v.text(scope_ref, "corpus.provider_binding.scope_ref", max_length=400)
    if any(ch.isspace() for ch in scope_ref):
        raise invalid("corpus.provider_binding.scope_ref", "scope_ref must not contain spaces")
    problem = uris.scope_ref_problem(scope_ref)
    if problem is None and provider_id == "openviking" and uris.scheme_of(scope_ref) != "viking":
        problem = "an openviking scope ref must be viking://user/<user>/peers/<peer>/…"
    if problem is not None:
        raise invalid("corpus.provider_binding.scope_ref", problem)
    return {"provider_id": provider_id, "provider_scope_ref": scope_ref}


def _corpus_allowlist(d: dict[str, Any]) -> tuple[list[str], dict[str, str]]:
    """The allowlisted ``goal/agent`` keys (sorted, distinct) and their configured actor
    peers."""
    allowlist = []
    peers: dict[str, str] = {}
    raw_allowlist = d.get("agent_allowlist") or []
    if not isinstance(raw_allowlist, list) or len(raw_allowlist) > 64:
        raise invalid("corpus.agent_allowlist", "agent_allowlist must be a list (≤ 64)")
    for i, entry in enumerate(raw_allowlist):
        entry = v.obj(entry, f"corpus.agent_allowlist.{i}")
        goal_id = v.identifier(entry.get("goal_id"), f"corpus.agent_allowlist.{i}.goal_id")
        agent_id = v.identifier(entry.get("agent_id"), f"corpus.agent_allowlist.{i}.agent_id")
        for key in entry:
            if key not in ("goal_id", "agent_id", "actor_peer_id"):
                raise invalid(f"corpus.agent_allowlist.{i}.{key}", "field not modelled")
        peer = v.identifier(
            entry.get("actor_peer_id"), f"corpus.agent_allowlist.{i}.actor_peer_id", required=False
        )
        allowlist.append(privacy.agent_key(goal_id, agent_id))
        if peer:
            peers[privacy.agent_key(goal_id, agent_id)] = peer
    return sorted(set(allowlist)), dict(sorted(peers.items()))


def _check_visibility(visibility: str, allowlist: list[str]) -> None:
    """``private`` is exactly one (Goal, Agent); ``goal_shared`` is sharing inside one
    Goal with the Agents it lists (never implied by ``private``); ``project`` admits
    every Agent of each allowlisted Goal. Checked again at read time
    (``privacy.may_read_corpus``)."""
    if visibility == privacy.PRIVATE and len(allowlist) != 1:
        raise invalid(
            "corpus.agent_allowlist",
            "a private corpus allowlists exactly one (goal_id, agent_id); share inside a "
            "Goal with a separate goal_shared corpus",
            reason="private_needs_exactly_one_agent",
        )
    if visibility == privacy.GOAL_SHARED and len({k.split("/", 1)[0] for k in allowlist}) != 1:
        raise invalid(
            "corpus.agent_allowlist",
            "a goal_shared corpus allowlists Agents of exactly one Goal",
            reason="goal_shared_needs_one_goal",
        )


def parse_standing_policy(document: Any, corpus: dict[str, Any]) -> dict[str, Any]:
    """Validate a ``reward_memory_standing_policy_v0`` against its corpus definition.

    It may only pre-approve what the corpus already declares: same owner, reviewer,
    authority source, project and class, one declared surface; never credentials, and
    an advisory class approves no action scope.
    """
    v.schema(document, c.STANDING_POLICY_SCHEMA, "standing_policy.schema_version")
    d = nfc(document)
    allowed = {
        "schema_version", "corpus_id", "owner", "reviewer", "authority_source", "project",
        "surface", "memory_class", "allowed_source_kinds", "verified_actor_roles",
        "action_scopes",
    }  # fmt: skip
    for key in d:
        if key not in allowed:
            raise invalid(f"standing_policy.{key}", "field not modelled by the standing policy")

    def tokens(key: str) -> list[str]:  # a required, non-empty set of tokens, sorted
        values = v.string_list(
            d.get(key), f"standing_policy.{key}", v.token, required=True, min_items=1
        )
        return sorted(set(values))

    policy = {
        "corpus_id": v.identifier(d.get("corpus_id"), "standing_policy.corpus_id"),
        "owner": v.ref(d.get("owner"), "standing_policy.owner"),
        "reviewer": v.ref(d.get("reviewer"), "standing_policy.reviewer"),
        "authority_source": v.ref(d.get("authority_source"), "standing_policy.authority_source"),
        "project": v.project(d.get("project"), "standing_policy.project"),
        "surface": v.surface(d.get("surface"), "standing_policy.surface"),
        "memory_class": v.choice(
            d.get("memory_class"), "standing_policy.memory_class", c.MEMORY_CLASSES
        ),
        "allowed_source_kinds": tokens("allowed_source_kinds"),
        "verified_actor_roles": tokens("verified_actor_roles"),
        "action_scopes": sorted(
            {
                scope.lower()
                for scope in v.action_scopes(
                    d.get("action_scopes"), "standing_policy.action_scopes"
                )
            }
        ),
    }
    mismatched = [
        key
        for key in ("corpus_id", "owner", "reviewer", "authority_source", "project", "memory_class")
        if policy[key] != corpus[key]
    ]
    if policy["surface"] not in corpus["surfaces"]:
        mismatched.append("surface")
    if mismatched:
        raise RewardMemoryError(
            "standing_policy_conflict",
            "The standing policy must match its corpus exactly.",
            field=f"standing_policy.{mismatched[0]}",
            details={"mismatched": mismatched},
        )
    refuse_forbidden_scopes(policy["action_scopes"], "standing_policy.action_scopes")
    if policy["memory_class"] != c.HARD_POLICY and policy["action_scopes"]:
        raise invalid(
            "standing_policy.action_scopes", "an advisory class pre-approves no action scope"
        )
    return c.standing_policy(policy)


@dataclass(frozen=True)
class Registration:
    """One corpus registration, planned or executed (``documents.corpora.registration``
    renders it): ``row`` is the corpus as stored (``None`` before its first
    registration); ``standing_policies`` is each stored policy's status once executed."""

    status: str
    definition: dict[str, Any]
    policy_digests: dict[str, str]
    row: Corpus | None
    executed: bool
    standing_policies: list[dict[str, Any]] | None = None


def register_corpora(
    document: Any, *, expected_revision: int | None = None, execute: bool = False
) -> list[Registration]:
    """Register every corpus of one input document: ``{"corpus": {...},
    "standing_policy" | "standing_policies": ...}`` or ``{"corpora": [those, ...]}``;
    one ``Registration`` per corpus (``documents.corpora.registration_batch``)."""
    document = document if isinstance(document, dict) else {}
    entries = document.get("corpora") if "corpora" in document else [document]
    if not isinstance(entries, list) or not entries:
        entries = [document]
    results = []
    for entry in entries:
        if not isinstance(entry, dict):
            entry = {}
        policies = entry.get("standing_policies")
        if policies is None and entry.get("standing_policy"):
            policies = [entry["standing_policy"]]
        results.append(
            register_corpus(
                corpus=entry.get("corpus"),
                standing_policies=policies,
                expected_revision=expected_revision,
                execute=execute,
            )
        )
    return results


def register_corpus(
    *,
    corpus: Any,
    standing_policies: list[Any] | None = None,
    expected_revision: int | None = None,
    execute: bool = False,
) -> Registration:
    """Register (or update) one corpus and its standing policies; idempotent.

    Re-registering an identical definition changes nothing. A changed definition needs
    ``expected_revision`` equal to the current revision (then revision + 1); the memory
    class never changes. A changed standing policy for a surface retires the previous
    one (its records keep their policy digest; new ingests bind the new digest).
    """
    definition = parse_corpus(corpus)
    policies = [parse_standing_policy(p, definition) for p in (standing_policies or [])]
    surfaces = [p["surface"] for p in policies]
    if len(set(surfaces)) != len(surfaces):
        raise invalid("standing_policy", "one standing policy per surface")
    for key in definition["agent_allowlist"]:
        goal_id, agent_id = key.split("/", 1)
        get_agent(goal_id, agent_id, area=AREA)
    definition_digest = digest_ref(definition)
    policy_digests = {p["surface"]: digest_ref(p) for p in policies}
    existing = Corpus.objects.filter(corpus_id=definition["corpus_id"]).first()
    status = _registration_status(existing, definition, definition_digest, expected_revision)
    if not execute:
        return Registration(status, definition, policy_digests, existing, executed=False)

    now = clock.now()
    with transaction.atomic():
        row = Corpus.objects.select_for_update().filter(corpus_id=definition["corpus_id"]).first()
        status = _registration_status(row, definition, definition_digest, expected_revision)
        fields = {
            **definition,
            "provider_binding_ref": providers.binding_ref(
                definition["provider_id"], definition["provider_scope_ref"]
            ),
            "definition_digest": definition_digest,
        }
        if row is None:
            try:
                with transaction.atomic():
                    row = Corpus.objects.create(**fields, created_at=now, updated_at=now)
            except IntegrityError:
                raise RewardMemoryError(
                    "revision_conflict",
                    "The corpus was registered concurrently; retry with expected_revision.",
                    field="corpus_id",
                ) from None
        elif status == "updated":
            Corpus.objects.filter(pk=row.pk, revision=row.revision).update(
                **fields, revision=row.revision + 1, updated_at=now
            )
            row.refresh_from_db()
        policy_status = _store_policies(row, policies, now)
    return Registration(
        status, definition, policy_digests, row, executed=True, standing_policies=policy_status
    )


def set_corpus_active(*, corpus_id: str, active: bool, principal: Principal) -> Corpus:
    """Retire (``active=False``) or reopen a corpus; only its declared owner may.

    A retired corpus keeps its records but every recall stops before the provider
    (``corpus_not_active``). The revision moves so stale recall requests are refused.
    """
    corpus = selectors.get_corpus(corpus_id)
    if not roles.acts_as(principal, corpus, c.OWNER_ROLE):
        raise RewardMemoryError(
            "owner_not_authorized", "Only the corpus owner retires or reopens it.", field="actor"
        )
    now = clock.now()
    with transaction.atomic():
        Corpus.objects.filter(pk=corpus.pk).exclude(active=active).update(
            active=active, revision=F("revision") + 1, updated_at=now
        )
    corpus.refresh_from_db()
    return corpus


def _registration_status(existing, definition, digest, expected_revision) -> str:
    if existing is None:
        return "created"
    if existing.memory_class != definition["memory_class"]:
        raise RewardMemoryError(
            "corpus_class_immutable",
            "A corpus keeps its memory class; register a new corpus instead.",
            field="corpus.memory_class",
        )
    if existing.definition_digest == digest:
        return "unchanged"
    if expected_revision != existing.revision:
        raise RewardMemoryError(
            "revision_conflict",
            "The corpus definition changed; pass expected_revision equal to the current one.",
            field="expected_revision",
            details={"current_revision": existing.revision},
        )
    return "updated"


def _store_policies(corpus: Corpus, policies: list[dict], now) -> list[dict[str, Any]]:
    """Call inside the registration transaction (the corpus row is locked)."""
    out = []
    for policy in policies:
        digest = digest_ref(policy)
        current = StandingPolicy.objects.filter(
            corpus=corpus, surface=policy["surface"], active=True
        ).first()
        if current is not None and current.policy_digest == digest:
            out.append(
                {"surface": policy["surface"], "policy_digest": digest, "status": "unchanged"}
            )
            continue
        if current is not None:
            StandingPolicy.objects.filter(pk=current.pk).update(active=False, retired_at=now)
        previous = StandingPolicy.objects.filter(corpus=corpus, policy_digest=digest).first()
        if previous is not None:  # re-activating an earlier identical policy
            StandingPolicy.objects.filter(pk=previous.pk).update(active=True, retired_at=None)
        else:
            StandingPolicy.objects.create(
                corpus=corpus,
                surface=policy["surface"],
                policy_digest=digest,
                document=policy,
                active=True,
                created_at=now,
            )
        out.append(
            {
                "surface": policy["surface"],
                "policy_digest": digest,
                "status": "replaced" if current is not None else "created",
            }
        )
    return out


# -- health ----------------------------------------------------------------------------------
def _state(value: bool, observed_at=None, **extra) -> dict[str, Any]:
    return {"value": bool(value), "observed_at": clock.iso(observed_at), **extra}


def health_facts(corpus: Corpus) -> dict[str, Any]:
    """The five health states, each observed separately and never merged (rendered by
    ``reward_memory.documents.registry.corpus_health``; a service, as it asks the
    provider).

    ``index_present`` asks the provider's read-only preflight; the other four read
    LoopX's own receipts. Stateless: nothing is written, no provider write happens.
    """
    try:
        preflight = providers.get(corpus.provider_id).preflight(selectors.provider_binding(corpus))
        index = _state(preflight.index_present, failure_kind=preflight.failure_kind)
    except providers.ProviderUnavailable as exc:
        index = _state(False, failure_kind=exc.kind)
    last_query, last_readback, last_applied, counts = selectors.health_reads(corpus)
    return {
        "corpus_id": corpus.corpus_id,
        "revision": corpus.revision,
        "health": {
            "corpus_present": _state(corpus.active, corpus.updated_at),
            "index_present": index,
            "retrieval_query_succeeded": _state(last_query is not None, last_query),
            "result_readback_verified": _state(last_readback is not None, last_readback),
            "memory_applied_with_receipt": _state(last_applied is not None, last_applied),
        },
        "records": {state: counts.get(state, 0) for state in c.LIFECYCLE_STATES},
    }


def corpora_health(corpora) -> list[tuple[Corpus, dict[str, Any]]]:
    """Each corpus with its ``health_facts`` (``documents.corpora.corpus_list``)."""
    return [(corpus, health_facts(corpus)) for corpus in corpora]
