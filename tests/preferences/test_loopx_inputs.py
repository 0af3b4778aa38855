"""Issue 23: the preferences app takes and refuses what real LoopX 2.1.1 does, and its
documents carry only LoopX's keys where the seed says so (receipts)."""

import pytest

from loopx_site.core.errors import DomainError
from preferences import services

SURFACE = "issue_fix.pr_description"
pytestmark = pytest.mark.django_db


def _receipt(**overrides):
    arguments = {"surface": SURFACE, "application_id": "app-1", "outcome": "applied"}
    return services.application_receipt(**{**arguments, **overrides})


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
    maintenance = services.maintenance_receipt(
        trigger="explicit_feedback", outcome="verified", corpus_ids=["notes"]
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
