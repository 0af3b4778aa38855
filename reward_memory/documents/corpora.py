"""Corpus documents: the corpus list (CLI and API alike), a registration and a batch of
registrations, and the normalised standing policy a registration stores."""

from typing import Any

from loopx_site.core.canonical import digest_ref
from reward_memory import contracts as c
from reward_memory import providers
from reward_memory.documents import registry

CORPUS_LIST_SCHEMA = "reward_memory_corpus_list_v0"
REGISTRATION_SCHEMA = "reward_memory_corpus_registration_v0"
REGISTRATION_BATCH_SCHEMA = "reward_memory_corpus_registration_batch_v0"


def corpus_list(corpora) -> dict[str, Any]:
    """``reward_memory_corpus_list_v0``: each corpus with its five health states
    (``services.corpora.corpora_health``: ``(corpus, health facts)`` pairs)."""
    return {
        "schema_version": CORPUS_LIST_SCHEMA,
        "corpora": [
            {**registry.corpus_payload(corpus), "health": facts["health"]}
            for corpus, facts in corpora
        ],
    }


def registration_batch(results: list[dict[str, Any]]) -> dict[str, Any]:
    """One registration document, or ``reward_memory_corpus_registration_batch_v0``."""
    if len(results) == 1:
        return results[0]
    return {"schema_version": REGISTRATION_BATCH_SCHEMA, "results": results}


def standing_policy(fields: dict[str, Any]) -> dict[str, Any]:
    """The normalised ``reward_memory_standing_policy_v0`` (its digest is the policy's
    identity, so the key order is this one)."""
    return {"schema_version": c.STANDING_POLICY_SCHEMA, **fields}


def registration(status, definition, policy_digests, row, *, executed) -> dict[str, Any]:
    """``reward_memory_corpus_registration_v0`` (planned unless executed)."""
    corpus_payload = registry.corpus_payload(row) if (row is not None and executed) else None
    return {
        "schema_version": REGISTRATION_SCHEMA,
        "status": status if executed else ("planned" if status != "unchanged" else "unchanged"),
        "executed": executed,
        "corpus_id": definition["corpus_id"],
        "definition_digest": digest_ref(definition),
        "provider": {
            "provider_id": definition["provider_id"],
            "binding_ref": providers.binding_ref(
                definition["provider_id"], definition["provider_scope_ref"]
            ),
        },
        "standing_policies": [
            {"surface": s, "policy_digest": d} for s, d in sorted(policy_digests.items())
        ],
        "corpus": corpus_payload,
        "writes_provider": False,
    }
