"""Every validator matches the whole value: a trailing newline is refused everywhere.

``re.match`` with a pattern ending in ``$`` accepts ``"value\\n"`` (``$`` also matches
before a final newline), which once let ``"review.collaboration\\n"`` become a second,
identical-looking key. Validators use ``fullmatch`` (and serializers ``FullRegexField``).
"""

import re
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import serializers

from hooks import boundary, contracts
from hooks.errors import ContractViolation
from loopx_site.core import clock
from loopx_site.core.api.fields import FullRegexField
from loopx_site.core.api.serializers import GoalRegisterInput
from loopx_site.core.errors import DomainError
from loopx_site.core.validation import IDENTIFIER_RE, require_identifier, require_text
from preferences.recall import config as recall_config
from preferences.recall import receipts
from preferences.services import journal
from reward_memory.domain import validation as rm
from tests.helpers import ROOT, run_cli

REFUSALS = (
    DomainError,
    ContractViolation,
    DjangoValidationError,
    serializers.ValidationError,
    ValueError,
)


def _serializer(value):
    data = GoalRegisterInput(data={"goal_id": value, "agent_ids": ["author"]})
    data.is_valid(raise_exception=True)


def _hooks_token(value):
    contracts._token(value, contracts.QUALIFIED_RE, "hook_id", "registration_rejected")


def _boundary_token(value):
    if boundary.token_violation(value):
        raise ValueError("not a token")


def _application_id(value):
    receipts.application_receipt(
        surface="issue_fix.pr_description",
        application_id=value,
        outcome="applied",
        preference_refs=["loopx-local:note:one"],
    )


def _context_key(value):
    recall_config.validate_context({value: "v"})


VALIDATORS = {
    "goal_id": (lambda v: require_identifier(v, "goal_id"), "demo"),
    "agent_id": (lambda v: require_identifier(v, "agent_id"), "author"),
    "text_pattern": (
        lambda v: require_text(v, "x", max_length=64, pattern=IDENTIFIER_RE),
        "abc",
    ),
    "preference_key": (journal._key, "review.collaboration"),
    "operation_id": (journal._operation_id, "preference-1"),
    "expected_revision": (journal.parse_expected_revision, "3"),
    "iso_timestamp": (clock.parse_iso_z, "2026-11-30T12:00:00Z"),
    "surface_id": (lambda v: recall_config.require_surface_id(v, "surface"), "issue_fix.pr"),
    "context_key": (_context_key, "language"),
    "application_id": (_application_id, "pr-123"),
    "rm_ref": (lambda v: rm.ref(v, "ref"), "owner-message-1"),
    "rm_token": (lambda v: rm.token(v, "t"), "scoped"),
    "rm_surface": (lambda v: rm.surface(v, "s"), "issue_fix.pr_description"),
    "rm_project": (lambda v: rm.project(v, "p"), "loopx-demo"),
    "rm_identifier": (lambda v: rm.identifier(v, "i"), "corpus-1"),
    "rm_digest": (lambda v: rm.digest(v, "d"), "sha256:" + "a" * 64),
    "hooks_qualified_id": (_hooks_token, "periodic_report.runtime_trigger"),
    "hooks_public_token": (_boundary_token, "receipt-1"),
    "serializer_identifier": (_serializer, "demo"),
    "full_regex_field": (
        lambda v: FullRegexField(r"^pwh_[0-9a-f]{4}$").run_validation(v),
        "pwh_00af",
    ),
}


#: Opaque text: LoopX's operation ids may carry spaces (``turn 44/retry``); a line break is
#: still refused (a control character).
OPAQUE_TEXT = {"operation_id"}


@pytest.mark.parametrize("name", sorted(VALIDATORS))
@pytest.mark.parametrize("suffix", ["\n", "\r\n", " "])
def test_validator_accepts_the_value_and_refuses_it_with_a_trailing_newline(name, suffix):
    validate, valid = VALIDATORS[name]
    validate(valid)  # accepted as is
    if name in OPAQUE_TEXT and suffix == " ":
        validate(valid + suffix)  # a space is part of opaque text, as in LoopX
        return
    with pytest.raises(REFUSALS):
        validate(valid + suffix)


APP_DIRS = ["loopx_site", "preferences", "reward_memory", "hooks", "turn_recall"]


def test_no_validator_uses_a_prefix_match():
    """``re.match``/``pattern.match`` are banned in app code: use ``fullmatch``."""
    offenders = []
    for app in APP_DIRS:
        for path in (ROOT / app).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            for number, line in enumerate(Path(path).read_text().splitlines(), 1):
                if re.search(r"\.match\(", line):
                    offenders.append(f"{path.relative_to(ROOT)}:{number}")
    assert offenders == []


def test_trailing_newline_key_is_refused_over_http_and_creates_nothing(host_client, db):
    from loopx_site.core import services
    from preferences.models import PreferenceSubject

    services.register_goal(goal_id="demo", agent_ids=["author"])
    body = {
        "key": "review.collaboration\n",
        "statement": "Ask the designated reviewer before merging.",
        "source_ref": "owner-message-1",
        "source_quote": "Use the designated reviewer.",
        "expected_revision": None,
        "operation_id": "preference-1",
        "execute": True,
    }
    response = host_client("demo", "author").post(
        "/api/v1/goals/demo/agents/author/preferences/remember/", body, format="json"
    )
    assert response.status_code == 400
    assert response.json()["field"] == "key"
    assert not PreferenceSubject.objects.exists()


def test_trailing_newline_goal_id_is_refused_by_the_cli(db):
    from loopx_site.core.models import Goal

    result = run_cli("goal", "register", "--goal-id", "demo\n", "--agent-id", "a", "--execute")
    assert result.code == 2
    assert result.json["code"] == "invalid_argument"
    assert result.json["field"] == "goal_id"
    assert not Goal.objects.exists()
