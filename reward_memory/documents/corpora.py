"""Corpus documents: the corpus list (CLI and API alike), a registration and a batch of
registrations."""

from typing import Any

from loopx_site.core.canonical import digest_ref
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


def registration_batch(results) -> dict[str, Any]:
    """The ``registration`` of the one ``services.corpora.Registration``, or
    ``reward_memory_corpus_registration_batch_v0`` of several."""
    if len(results) == 1:
        return registration(results[0])
    return {
        "schema_version": REGISTRATION_BATCH_SCHEMA,
        "results": [registration(result) for result in results],
    }


def registration(result) -> dict[str, Any]:
    """``reward_memory_corpus_registration_v0`` of a ``services.corpora.Registration``
    (planned unless executed; an executed one lists each standing policy's status)."""
    status, definition, executed = result.status, result.definition, result.executed
    row, policy_digests = result.row, result.policy_digests
    corpus_payload = registry.corpus_payload(row) if (row is not None and executed) else None
    document = {
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
    if executed:
        document["standing_policies"] = result.standing_policies
    return document
