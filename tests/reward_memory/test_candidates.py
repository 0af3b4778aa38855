"""Candidate contract: structure errors, identity, the two pure adapters, and the
stability of refs and digests under key order and Unicode normalisation."""

import json
import unicodedata

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reward_memory.domain import candidates
from reward_memory.errors import RewardMemoryError
from tests.reward_memory import factories as f


def _evaluate(doc):
    return candidates.evaluate(doc, now=f.NOW)


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"target_class": "opinion"}, "target_class"),
        ({"content_summary": ""}, "content_summary"),
        ({"source": {"observed_at": "yesterday"}}, "source.observed_at"),
        ({"source": {"observed_at": "2026-11-30T09:00:00"}}, "source.observed_at"),
        ({"scope": {"surface": "NoDots"}}, "scope.surface"),
        ({"scope": {"project": "../escape"}}, "scope.project"),
        ({"confidence": {"level": "certain"}}, "confidence.level"),
        ({"requested_action_scopes": "merge"}, "requested_action_scopes"),
        ({"requested_action_scopes": ["Merge Now"]}, "requested_action_scopes.0"),
        ({"conflicts": "none"}, "conflicts"),
        ({"source": "user"}, "source"),
        ({"working_context_kind": "fresh_execution_context"}, "working_context_kind"),
        ({"lineage": {"prior_candidate_ref": "cand_short"}}, "lineage.prior_candidate_ref"),
        ({"authority_checkpoint": {"checkpoint_ref": "c", "verified": "yes"}}, None),
    ],
)
def test_structural_errors_raise_invalid_argument_naming_the_field(overrides, field):
    with pytest.raises(RewardMemoryError) as exc:
        _evaluate(f.candidate(**overrides))
    assert exc.value.code == "invalid_argument"
    if field:
        assert exc.value.field == field
    assert exc.value.envelope()["schema_version"] == "reward_memory_error_v0"


@pytest.mark.parametrize("doc", [None, [], "x", {"schema_version": "reward_memory_candidate_v1"}])
def test_non_candidates_are_refused(doc):
    with pytest.raises(RewardMemoryError) as exc:
        _evaluate(doc)
    assert exc.value.code in ("invalid_argument", "unsupported_schema")


def test_candidate_ref_ignores_judgement_fields_but_not_identity_fields():
    base = candidates.candidate_ref(f.candidate())
    same = candidates.candidate_ref(
        f.candidate(
            reasoning_summary="different words",
            confidence={"level": "high"},
            source={"observed_at": "2026-11-01T00:00:00Z"},
            requested_action_scopes=[],
        )
    )
    assert base == same
    assert base != candidates.candidate_ref(f.candidate(content_summary="Other content."))
    assert base != candidates.candidate_ref(f.candidate(scope={"surface": "mod.other"}))
    assert base != candidates.candidate_ref(f.candidate(source={"actor": "user:other"}))


def test_requested_scopes_are_a_set_in_the_identity():
    a = f.hard_policy_candidate(requested_action_scopes=["x.a", "x.b"])
    b = f.hard_policy_candidate(requested_action_scopes=["x.b", "x.a", "x.a"])
    assert candidates.candidate_ref(a) == candidates.candidate_ref(b)


def test_issue_fix_adapter_is_a_pure_field_mapping():
    event = f.issue_fix_event()
    before = json.dumps(event, sort_keys=True)
    mapped = candidates.adapt_issue_fix(event)
    assert json.dumps(event, sort_keys=True) == before
    assert mapped["schema_version"] == "reward_memory_candidate_v0"
    assert mapped["source"] == {
        "kind": "maintainer_feedback",
        "actor": "user:maint-1",
        "actor_role": "maintainer",
        "evidence_ref": "review:proj-a#12/r-1",
        "observed_at": f.OBSERVED,
    }
    assert mapped["scope"] == {
        "workspace": "ws",
        "project": "proj-a",
        "surface": f.SURFACE,
        "repository_revision": "rev-1",
        "subject_ref": "issue:proj-a#12",
    }
    assert mapped["freshness"] == {"source_revision": "rev-1", "current_revision": "rev-1"}
    assert candidates.adapt_issue_fix(event) == mapped


def test_issue_fix_adapter_errors_name_the_adapter_fields():
    with pytest.raises(RewardMemoryError) as exc:
        candidates.adapt_and_evaluate(
            f.issue_fix_event(contributor={"observed_at": "soon"}), now=f.NOW
        )
    assert exc.value.field == "contributor.observed_at"


def test_issue_fix_adapter_reasons_name_the_adapter_fields():
    adapted = candidates.adapt_and_evaluate(f.issue_fix_event(current_revision="rev-2"), now=f.NOW)
    assert [r.to_payload() for r in adapted.evaluation.reasons] == [
        {"code": "source_not_current", "field": "repository_revision"}
    ]


def test_scoped_feedback_adapter_maps_onto_the_same_candidate():
    event = f.scoped_event()
    mapped = candidates.adapt_scoped_feedback(event)
    expected = f.candidate()
    assert mapped == expected
    assert candidates.candidate_ref(mapped) == candidates.candidate_ref(expected)


def test_compact_events_refuse_authority_and_raw_fields():
    adapted = candidates.adapt_and_evaluate(
        f.scoped_event(provider_binding={"provider_id": "local"}, comment_body="raw text"),
        now=f.NOW,
    )
    codes = {r.code for r in adapted.evaluation.reasons}
    assert codes == {"authority_field", "raw_content_field"}
    assert adapted.evaluation.candidate is None


def test_event_ref_is_the_digest_of_the_whole_event():
    a = candidates.event_ref(f.scoped_event("ev-1"))
    assert a == candidates.event_ref(f.scoped_event("ev-1"))
    assert a != candidates.event_ref(f.scoped_event("ev-2"))
    assert a.startswith("rme_")


# -- hypothesis: stability under key order and Unicode normalisation ----------------------------
_PIECES = [*"abcxyz ", "\u00e9", "e\u0301", "\u00c5", "A\u030a", "\ufb01", "\u00f1", "n\u0303"]
_text = (
    st.lists(st.sampled_from(_PIECES), min_size=1, max_size=30)
    .map("".join)
    .filter(lambda s: s.strip())
)


def _shuffled(value, rnd):
    if isinstance(value, dict):
        items = list(value.items())
        rnd.shuffle(items)
        return {k: _shuffled(v, rnd) for k, v in items}
    if isinstance(value, list):
        return [_shuffled(v, rnd) for v in value]
    return value


def _normal_form(value, form):
    if isinstance(value, str):
        return unicodedata.normalize(form, value)
    if isinstance(value, dict):
        return {_normal_form(k, form): _normal_form(v, form) for k, v in value.items()}
    if isinstance(value, list):
        return [_normal_form(v, form) for v in value]
    return value


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    summary=_text,
    reasoning=_text,
    actor=_text.map(lambda s: "user:" + s.replace(" ", "-")),
    form=st.sampled_from(["NFC", "NFD"]),
    rnd=st.randoms(use_true_random=False),
)
def test_refs_and_digests_are_stable_under_key_order_and_unicode_normalisation(
    summary, reasoning, actor, form, rnd
):
    doc = f.candidate(content_summary=summary, reasoning_summary=reasoning, source={"actor": actor})
    nfc_doc = _normal_form(doc, "NFC")
    variant = _shuffled(_normal_form(doc, form), rnd)
    assert candidates.candidate_ref(_normal_form(variant, "NFC")) == candidates.candidate_ref(
        nfc_doc
    )
    evaluated_a = candidates.evaluate(nfc_doc, now=f.NOW)
    evaluated_b = candidates.evaluate(variant, now=f.NOW)
    assert evaluated_a.candidate_ref == evaluated_b.candidate_ref
    assert evaluated_a.candidate_digest == evaluated_b.candidate_digest
    event = f.scoped_event(content_summary=summary, source={"actor": actor})
    event_variant = _shuffled(_normal_form(event, "NFD"), rnd)
    assert candidates.event_ref(event) == candidates.event_ref(_normal_form(event_variant, "NFC"))
    adapted_a = candidates.adapt_and_evaluate(event, now=f.NOW)
    adapted_b = candidates.adapt_and_evaluate(event_variant, now=f.NOW)
    assert adapted_a.event_ref == adapted_b.event_ref
    assert adapted_a.evaluation.candidate_ref == adapted_b.evaluation.candidate_ref


def test_absurdly_nested_documents_are_refused_without_recursion():
    doc = f.candidate()
    inner: dict = {}
    doc["scope"]["extra"] = inner
    for _ in range(5000):
        inner["x"] = {}
        inner = inner["x"]
    with pytest.raises(RewardMemoryError) as exc:
        _evaluate(doc)
    assert exc.value.code == "invalid_argument"
