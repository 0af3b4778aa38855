"""Stage 1: corpus registry, standing policies, read models and selectors."""

import datetime as dt

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from loopx_site.core.errors import DomainError
from reward_memory import contracts, selectors, services
from reward_memory.documents import corpora as corpus_documents
from reward_memory.documents import registry
from reward_memory.errors import RewardMemoryError
from reward_memory.models import Corpus, StandingPolicy
from tests.reward_memory import factories as f


def _register(doc=None, policies=None, **kwargs):
    """The registration document `register-corpus` answers."""
    return corpus_documents.registration(
        services.register_corpus(corpus=doc or f.corpus_doc(), standing_policies=policies, **kwargs)
    )


def test_preview_plans_and_writes_nothing(db):
    result = _register(policies=[f.policy_doc()])
    assert result["status"] == "planned"
    assert result["executed"] is False
    assert result["standing_policies"][0]["policy_digest"].startswith("sha256:")
    assert not Corpus.objects.exists()


def test_register_is_idempotent_and_never_exposes_the_scope_ref(db):
    first = _register(f.corpus_doc(scope_ref="local:secret-scope"), [f.policy_doc()], execute=True)
    again = _register(f.corpus_doc(scope_ref="local:secret-scope"), [f.policy_doc()], execute=True)
    assert (first["status"], again["status"]) == ("created", "unchanged")
    assert again["standing_policies"][0]["status"] == "unchanged"
    assert Corpus.objects.count() == 1
    assert "secret-scope" not in str(first)
    corpus = Corpus.objects.get()
    assert corpus.provider_scope_ref == "local:secret-scope"
    assert first["corpus"]["provider"]["binding_ref"] == corpus.provider_binding_ref
    assert first["writes_provider"] is False


def test_changing_a_corpus_needs_the_expected_revision(db):
    _register(execute=True)
    changed = f.corpus_doc(surfaces=[f.SURFACE, "issue_fix.patch_planning"])
    with pytest.raises(RewardMemoryError) as exc:
        _register(changed, execute=True)
    assert (exc.value.code, exc.value.details) == ("revision_conflict", {"current_revision": 1})
    result = _register(changed, execute=True, expected_revision=1)
    assert result["status"] == "updated"
    assert Corpus.objects.get().revision == 2


def test_memory_class_is_immutable(db):
    _register(execute=True)
    with pytest.raises(RewardMemoryError) as exc:
        _register(f.corpus_doc(memory_class="hard_policy"), execute=True, expected_revision=1)
    assert exc.value.code == "corpus_class_immutable"


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"owner": "user:other"}, "standing_policy.owner"),
        ({"project": "proj-b"}, "standing_policy.project"),
        ({"surface": "other_module.summary"}, "standing_policy.surface"),
        ({"memory_class": "hard_policy"}, "standing_policy.memory_class"),
    ],
)
def test_standing_policy_must_match_its_corpus(db, overrides, field):
    with pytest.raises(RewardMemoryError) as exc:
        _register(policies=[f.merge(f.policy_doc(), overrides)], execute=True)
    assert (exc.value.code, exc.value.field) == ("standing_policy_conflict", field)
    assert not Corpus.objects.exists()


def test_advisory_standing_policies_approve_no_action_scope(db):
    with pytest.raises(RewardMemoryError) as exc:
        _register(policies=[f.policy_doc(action_scopes=["issue_fix.request_changes"])])
    assert exc.value.field == "standing_policy.action_scopes"
    with pytest.raises(RewardMemoryError) as exc:
        _register(policies=[f.policy_doc(action_scopes=["issue_fix.merge"])])
    assert (exc.value.code, exc.value.field) == (
        "forbidden_action_scope",
        "standing_policy.action_scopes.0",
    )


def test_standing_policies_never_grant_credentials(db):
    doc = f.corpus_doc(memory_class="hard_policy")
    policy = f.policy_doc(memory_class="hard_policy", action_scopes=["credentials.rotate"])
    with pytest.raises(RewardMemoryError):
        _register(doc, [policy])


def test_replacing_a_standing_policy_keeps_one_active_per_surface(db):
    _register(policies=[f.policy_doc()], execute=True)
    result = _register(policies=[f.policy_doc(roles=["maintainer"])], execute=True)
    assert result["standing_policies"][0]["status"] == "replaced"
    assert StandingPolicy.objects.filter(active=True).count() == 1
    assert StandingPolicy.objects.count() == 2
    back = _register(policies=[f.policy_doc()], execute=True)
    assert back["standing_policies"][0]["status"] == "replaced"
    assert StandingPolicy.objects.count() == 2


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"corpus_id": "bad id"}, "corpus.corpus_id"),
        ({"memory_class": "gossip"}, "corpus.memory_class"),
        ({"surfaces": []}, "corpus.surfaces"),
        ({"surfaces": ["a.b", "a.b"]}, "corpus.surfaces"),
        ({"privacy": {"raw_content_captured": True}}, "corpus.privacy.raw_content_captured"),
        ({"provider_binding": {"provider_id": "mystery"}}, "corpus.provider_binding.provider_id"),
        ({"unknown": 1}, "corpus.unknown"),
        (
            {"provider_binding": {"provider_id": "openviking", "scope_ref": "viking://agent/x/m"}},
            "corpus.provider_binding.scope_ref",
        ),
    ],
)
def test_invalid_corpus_definitions_are_errors(db, overrides, field):
    with pytest.raises(RewardMemoryError) as exc:
        _register(f.merge(f.corpus_doc(), overrides))
    assert exc.value.field == field


def test_allowlisted_agents_must_be_registered(db):
    with pytest.raises(DomainError) as exc:
        _register(f.corpus_doc(agents=[("demo", "ghost")]))
    assert exc.value.code == "goal_not_registered"


def test_corpus_retirement_is_the_owners(db, corpus):
    with pytest.raises(RewardMemoryError):
        services.set_corpus_active(corpus_id="prefs", active=False, principal=f.op(f.REVIEWER))
    retired = services.set_corpus_active(corpus_id="prefs", active=False, principal=f.op(f.OWNER))
    assert (retired.active, retired.revision) == (False, 2)
    assert (
        registry.corpus_health(services.health_facts(retired))["health"]["corpus_present"]["value"]
        is False
    )


def test_list_corpora_is_scoped_to_allowlisted_agents(db, agents):
    f.register("one", agents=[("demo", "author")], visibility="private")
    f.register("two", agents=[("demo", "reviewer")], visibility="private")
    f.register("three", agents=[("demo", "reviewer")], visibility="project")
    assert [c.corpus_id for c in selectors.list_corpora()] == ["one", "three", "two"]
    assert [c.corpus_id for c in selectors.list_corpora(goal_id="demo", agent_id="author")] == [
        "one",
        "three",
    ]
    # a Goal-wide scope reads only the non-private corpora of its Goal
    assert [c.corpus_id for c in selectors.list_corpora(goal_id="demo")] == ["three"]
    assert selectors.list_corpora(goal_id="other") == []


def test_soft_preference_documents_are_active_unexpired_records_of_the_project(
    db, agents, frozen_clock
):
    prefs = f.register("prefs", agents=[("demo", "author")])
    other = f.register("other-project", project="proj-b", agents=[("demo", "author")])
    f.route_agents(prefs)  # both share a surface: the experiment routes it to one corpus

    def activate(event_id, corpus_id="prefs", **kw):
        kw.setdefault("content_summary", f"Preference {event_id}.")
        return f.ingested(
            event=f.scoped_event(event_id, corpus_id=corpus_id, **kw),
            goal_id="demo",
            agent_id="author",
            execute=True,
        )["record_ref"]

    keep = activate("a")
    retired = activate("b")
    activate("c", expires_at="2026-12-01T13:00:00Z")
    f.route_agents(other)
    f.role_binding("user:maint-1", "maintainer", project="proj-b")
    activate("d", corpus_id="other-project", scope={"project": "proj-b"})
    services.retire_record(record_ref=retired, principal=f.op(f.RETIRER))
    frozen_clock.advance(dt.timedelta(hours=2))
    scope = {"goal_id": "demo", "agent_id": "author"}
    docs = selectors.soft_preference_documents("proj-a", **scope)
    assert docs == [{"ref": keep, "summary": "Preference a.", "surfaces": [f.SURFACE]}]
    assert selectors.soft_preference_documents("proj-b", **scope)[0]["summary"] == "Preference d."
    assert selectors.soft_preference_documents("nope", **scope) == []
    assert selectors.soft_preference_documents("proj-a", goal_id=None, agent_id=None) == []


def test_soft_preference_documents_is_one_query(db, corpus):
    topics = ("changelog entries", "reviewer assignment", "commit tense", "release notes", "tests")
    for i, topic in enumerate(topics):  # five distinct lessons (a restated one would merge)
        f.ingested(
            event=f.scoped_event(f"e{i}", content_summary=f"Keep {topic} consistent."),
            goal_id="demo",
            agent_id="author",
            execute=True,
        )
    with CaptureQueriesContext(connection) as ctx:
        docs = selectors.soft_preference_documents("proj-a", goal_id="demo", agent_id="author")
    assert len(docs) == 5
    assert len(ctx.captured_queries) == 2  # the readable corpora, then the records


def test_architecture_contract_is_machine_readable():
    payload = contracts.architecture()
    assert payload["schema_version"] == "reward_memory_architecture_v0"
    assert [c["memory_class"] for c in payload["classes"]] == list(contracts.MEMORY_CLASSES)
    assert [p["layer"] for p in payload["precedence_layers"]] == list(contracts.PRECEDENCE)
    assert payload["precedence_layers"][0]["layer"] == "explicit_action_authority_and_privacy"
    assert payload["precedence_is_decision_table"] is False
    stage1 = payload["stages"][0]
    assert stage1["health_states"] == list(contracts.HEALTH_STATES)
    assert stage1["health_states_merged"] is False
    assert set(payload["guard_reason_codes"]) == set(contracts.REASON_CODES)
