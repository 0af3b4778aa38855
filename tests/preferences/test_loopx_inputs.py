"""Issue 23: the preferences app takes and refuses what real LoopX 2.1.1 does, and its
documents carry only LoopX's keys where the seed says so (receipts)."""

import pytest

from loopx_site.core.canonical import canonical_text_bytes
from loopx_site.core.errors import DomainError
from preferences import selectors, services
from preferences.documents import recall as recall_documents
from preferences.domain import journal as rules

SURFACE = "issue_fix.pr_description"
pytestmark = pytest.mark.django_db


def _receipt(**overrides):
    arguments = {"surface": SURFACE, "application_id": "app-1", "outcome": "applied"}
    return recall_documents.application_receipt(
        **services.application_receipt(**{**arguments, **overrides})
    )


def test_receipts_hold_only_the_seed_fields_in_loopx_order():
    receipt = _receipt(preference_refs=["ref-a"])
    assert list(receipt) == [
        "schema_version",
        "surface",
        "application_id",
        "outcome",
        "preference_ref_digests",
        "artifact_ref",
    ]
    maintenance = recall_documents.maintenance_receipt(
        **services.maintenance_receipt(
            trigger="explicit_feedback", outcome="verified", corpus_ids=["notes"]
        )
    )
    assert list(maintenance) == [
        "schema_version",
        "trigger",
        "outcome",
        "corpus_ids",
        "scope_ref_digests",
        "evidence_ref",
    ]


@pytest.mark.parametrize("application_id", ["owner/repo#123", "a" * 200])
def test_receipt_takes_loopx_public_safe_application_ids(application_id):
    assert _receipt(application_id=application_id)["application_id"] == application_id


@pytest.mark.parametrize("application_id", ["a" * 201, "/abs/path", "#1", "has space"])
def test_receipt_refuses_what_loopx_refuses_as_an_application_id(application_id):
    with pytest.raises(DomainError) as caught:
        _receipt(application_id=application_id)
    assert caught.value.field == "application_id"


@pytest.mark.parametrize("surface", ["Issue_fix.PR", "issue_fix.PR", "1issue.fix", "issue._x"])
def test_surfaces_are_lower_case_module_qualified_like_loopx(surface):
    with pytest.raises(DomainError) as caught:
        _receipt(surface=surface)
    assert caught.value.field == "surface"


def test_a_lower_case_surface_with_digits_dashes_and_underscores_is_taken():
    assert _receipt(surface="issue-fix2.pr_description")["surface"] == "issue-fix2.pr_description"


# -- the journal's input edges (real LoopX 2.1.1) -------------------------------------------
def _remember(remember, **overrides):
    return remember(execute=False, **overrides)


@pytest.mark.parametrize("statement", ["   ", "\t\n", "\u3000"])
def test_a_blank_statement_is_refused_like_loopx(remember, statement):
    with pytest.raises(DomainError) as caught:
        _remember(remember, statement=statement)
    assert caught.value.field == "statement"


def test_statement_length_counts_utf16_code_units_like_javascript(remember):
    assert _remember(remember, statement="🙂" * 600)["status"] == "preview"
    with pytest.raises(DomainError) as caught:
        _remember(remember, statement="🙂" * 601)  # 1202 code units
    assert caught.value.field == "statement"
    with pytest.raises(DomainError):
        _remember(remember, statement="🙂" * 700)


def test_expires_at_takes_milliseconds_and_stores_them_as_loopx_does(remember):
    proposed = _remember(remember, expires_at="2099-01-01T00:00:00Z")["proposed"]
    assert proposed["expires_at"] == "2099-01-01T00:00:00.000Z"
    proposed = _remember(remember, expires_at="2099-01-01T00:00:00.5Z")["proposed"]
    assert proposed["expires_at"] == "2099-01-01T00:00:00.500Z"
    with pytest.raises(DomainError) as caught:
        _remember(remember, expires_at="2099-01-01T00:00:00.123456Z")
    assert caught.value.field == "expires_at"


def test_capacity_counts_the_list_as_json_stringify_does(remember, monkeypatch):
    size = len(canonical_text_bytes(_remember(remember)["proposed"]))
    # One item of n bytes is "[" + n + "]" for LoopX: n + 2 bytes.
    monkeypatch.setattr(rules, "MAX_BYTES", size + 1)
    with pytest.raises(DomainError) as caught:
        _remember(remember)
    assert caught.value.code == "capacity_exceeded"
    monkeypatch.setattr(rules, "MAX_BYTES", size + 2)
    assert _remember(remember)["status"] == "preview"


def test_history_keeps_its_cursor_at_the_end(remember):
    remember()
    page = selectors.history(goal_id="demo", agent_id="author")
    assert page["has_more"] is False
    assert page["next_cursor"] is not None
    tail = selectors.history(goal_id="demo", agent_id="author", after_cursor=page["next_cursor"])
    assert (tail["events"], tail["next_cursor"]) == ([], page["next_cursor"])


# -- provider responses (real LoopX 2.1.1) --------------------------------------------------
def _inventory(**overrides):
    entry = {
        "corpus_id": "project_preferences",
        "scope_ref": "project-leg",
        "read_role": "primary",
        "write_mode": "provider_managed",
        "write_actor_ref": "provider-writer",
        "source_of_truth": "provider-store",
        "writeback_triggers": ["explicit_feedback"],
        "closure_policy": "write_wait_l2_read_scoped_recall",
    }
    return [{**entry, **overrides}]


def test_inventory_takes_loopx_public_safe_references():
    from preferences.recall import protocol

    entry = protocol.validate_inventory(_inventory(source_of_truth="owner/repo#notes"))[0]
    assert entry["source_of_truth"] == "owner/repo#notes"
    assert protocol.validate_inventory(_inventory())[0]["scope_ref"] == "project-leg"


@pytest.mark.parametrize(
    "overrides",
    [{"source_of_truth": "has space"}, {"scope_ref": "/abs"}, {"write_actor_ref": "x" * 201}],
)
def test_inventory_refuses_what_loopx_refuses(overrides):
    from preferences.recall import protocol

    with pytest.raises(protocol.ProtocolFailure) as caught:
        protocol.validate_inventory(_inventory(**overrides))
    assert caught.value.kind == "invalid_corpus_inventory"
