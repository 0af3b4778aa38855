"""Receipts: only the pinned fields, digests instead of refs, public https artifacts only."""

import hashlib
import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from preferences import services
from preferences.documents import recall as documents
from preferences.recall.errors import SemanticPreferenceError
from tests.helpers import run_cli
from tests.preferences_recall.conftest import SURFACE

pytestmark = pytest.mark.django_db

APPLICATION_FIELDS = {
    "schema_version",
    "surface",
    "application_id",
    "outcome",
    "artifact_ref",
    "preference_ref_digests",
}
MAINTENANCE_FIELDS = {
    "schema_version",
    "trigger",
    "outcome",
    "corpus_ids",
    "evidence_ref",
    "scope_ref_digests",
}
DIGEST = re.compile(r"^[0-9a-f]{16}$")
PRIVATE_REFS = ["provider-owned-reference/SECRET-A", "mem://corpus/SECRET-B"]
PRIVATE_SCOPES = ["provider-owned-scope-reference/SECRET-C"]


def _sha16(ref: str) -> str:
    return hashlib.sha256(ref.encode()).hexdigest()[:16]


def _application(**overrides):
    args = {
        "surface": SURFACE,
        "application_id": "pr-123-description-v2",
        "outcome": "applied",
        "preference_refs": PRIVATE_REFS,
        "artifact_ref": "https://github.com/owner/repo/pull/123",
    }
    args.update(overrides)
    return documents.application_receipt(**services.application_receipt(**args))


def _maintenance(**overrides):
    args = {
        "trigger": "source_truth_changed",
        "outcome": "verified",
        "corpus_ids": ["project_preferences"],
        "scope_refs": PRIVATE_SCOPES,
        "evidence_ref": "project-preference-readback-v2",
    }
    args.update(overrides)
    return documents.maintenance_receipt(**services.maintenance_receipt(**args))


def _receipt_shapes():
    """Every receipt shape the hook produces, through the service, CLI and API paths."""
    yield "application", _application()
    yield "application_minimal", _application(artifact_ref=None, outcome="ignored")
    yield "maintenance", _maintenance()
    yield (
        "maintenance_minimal",
        _maintenance(scope_refs=[], evidence_ref=None, outcome="no_write_rationale"),
    )
    cli = run_cli(
        "semantic_preference", "receipt", "--surface", SURFACE,
        "--application-id", "pr-1", "--outcome", "failed",
        "--preference-ref", PRIVATE_REFS[0], "--preference-ref", PRIVATE_REFS[1],
    )  # fmt: skip
    yield "application_cli", cli.json
    cli = run_cli(
        "semantic_preference", "maintenance-receipt", "--trigger", "explicit_feedback",
        "--outcome", "verified", "--corpus-id", "project_preferences",
        "--scope-ref", PRIVATE_SCOPES[0], "--evidence-ref", "https://example.com/evidence/1",
    )  # fmt: skip
    yield "maintenance_cli", cli.json


def test_every_receipt_shape_holds_only_pinned_fields_and_digests():
    for name, receipt in _receipt_shapes():
        text = json.dumps(receipt)
        for secret in ("SECRET-A", "SECRET-B", "SECRET-C", "provider-owned", "mem://"):
            assert secret not in text, (name, secret)
        if receipt["schema_version"] == "semantic_preference_application_receipt_v0":
            assert set(receipt) == APPLICATION_FIELDS, name
            digests = receipt["preference_ref_digests"]
            assert digests == sorted(_sha16(r) for r in PRIVATE_REFS), name
        else:
            assert receipt["schema_version"] == "semantic_preference_maintenance_receipt_v0"
            assert set(receipt) == MAINTENANCE_FIELDS, name
            digests = receipt["scope_ref_digests"]
            assert digests in ([], [_sha16(PRIVATE_SCOPES[0])]), name
        assert all(DIGEST.match(d) for d in digests), name


def test_application_receipt_pins_the_seed_example():
    receipt = _application(preference_refs=["provider-owned-reference"])
    assert receipt == {
        "schema_version": "semantic_preference_application_receipt_v0",
        "surface": SURFACE,
        "application_id": "pr-123-description-v2",
        "outcome": "applied",
        "artifact_ref": "https://github.com/owner/repo/pull/123",
        "preference_ref_digests": [_sha16("provider-owned-reference")],
    }


def test_at_most_20_preference_refs_and_duplicates_collapse():
    refs = [f"ref-{i}" for i in range(20)]
    assert len(_application(preference_refs=refs)["preference_ref_digests"]) == 20
    assert len(_application(preference_refs=["a", "a", "b"])["preference_ref_digests"]) == 2
    with pytest.raises(SemanticPreferenceError) as exc:
        _application(preference_refs=[*refs, "ref-20"])
    assert exc.value.field == "preference_ref"
    # LoopX: --preference-ref is optional (a receipt of an ignored/failed application).
    assert _application(preference_refs=[])["preference_ref_digests"] == []
    assert (
        services.application_receipt(surface=SURFACE, application_id="a", outcome="ignored")[
            "preference_ref_digests"
        ]
        == []
    )


@pytest.mark.parametrize(
    "url",
    [
        "http://github.com/owner/repo/pull/1",
        "https://user:pass@github.com/owner/repo",
        "https://token@github.com/owner/repo",
        "https://10.0.0.5/x",
        "https://[::1]/x",
        "https://intranet/x",
        "https://build.internal/x",
        "https://github.com/x?access_token=abc",
        "https://github.com/x?X-Amz-Signature=abc",
        "https://github.com/x#access_token=abc",
        "https://github.com/x?api_key=abc",
        "file:///etc/passwd",
        "/home/me/artifact.txt",
        "https://github.com/has space",
        "https://",
        # obfuscated loopback / private spellings (issue 10 item 8)
        "https://127.1/x",
        "https://0x7f.1/x",
        "https://0x7f000001/x",
        "https://2130706433/x",
        "https://0177.0.0.1/x",
        "https://127.0.0.1./x",
        "https://[::ffff:127.0.0.1]/x",
        "https://[::ffff:7f00:1]/x",
        "https://[fe80::1%25eth0]/x",
        "https://[fd00::1]/x",
        "https://169.254.169.254/latest/meta-data",
        "https://192.168.1.10/x",
        "https://100.64.0.1/x",
        "https://0.0.0.0/x",
        "https://[::]/x",
        "https://host.localhost/x",
        "https://printer.local/x",
        "https://u@github.com/x",
        "https://:p@github.com/x",
        "https://github.com/x?token=abc",
        "https://github.com/x?client_secret=abc",
        "https://github.com/x?password=abc",
        "https://github.com/x?sig=abc",
        "https://github.com/x?Authorization=Bearer",
        "https://github.com\\@evil.example/x",
    ],
)
def test_artifact_ref_must_be_public_https_or_loopback_without_credentials(url):
    with pytest.raises(SemanticPreferenceError) as exc:
        _application(artifact_ref=url)
    assert (exc.value.code, exc.value.field) == ("invalid_argument", "artifact_ref")
    if len(url) > len("https://"):
        assert url not in json.dumps(exc.value.envelope())


CREDENTIAL_URLS = [
    "https://example.com/ghp_abcdefghijklmnopqrstuvwxyz0123456789/",
    "https://example.com/u/sk-proj-abcdefghijklmnopqrst/report",
    "https://example.com/a/lxh_Q2xhdWRlSXNBSGVscGZ1bEFz",
    "https://example.com/x?ref=ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    "https://example.com/x?token=abc",
    "https://example.com/x?access_token=",
    "https://example.com/x#id_token=abc",
    "https://user:pass@example.com/x",
]


@pytest.mark.privacy_exempt("feeds credential-like URLs that must be refused")
@pytest.mark.parametrize("url", CREDENTIAL_URLS)
def test_an_artifact_url_with_a_credential_in_any_part_is_refused(url):
    with pytest.raises(SemanticPreferenceError) as exc:
        _application(artifact_ref=url)
    assert (exc.value.code, exc.value.field) == ("invalid_argument", "artifact_ref")
    assert url not in json.dumps(exc.value.envelope())
    with pytest.raises(SemanticPreferenceError) as evidence:
        _maintenance(evidence_ref=url)
    assert evidence.value.field == "evidence_ref"


@pytest.mark.privacy_exempt("feeds credential-like URLs that must be refused")
def test_cli_and_api_refuse_a_token_in_the_artifact_path(host_client, goal):
    url = CREDENTIAL_URLS[0]
    result = run_cli(
        "semantic_preference", "receipt", "--surface", SURFACE, "--application-id", "a",
        "--outcome", "applied", "--artifact-ref", url,
    )  # fmt: skip
    assert result.code == 2
    assert (result.json["code"], result.json["field"]) == ("invalid_argument", "artifact_ref")
    assert result.json["details"] == {"reason": "url_with_credentials", "part": "path"}
    assert "ghp_" not in result.stdout
    response = host_client("demo").post(
        "/api/v1/semantic-preferences/receipts/",
        {"surface": SURFACE, "application_id": "a", "outcome": "applied", "artifact_ref": url},
        format="json",
    )
    assert response.status_code == 400
    assert response.json()["field"] == "artifact_ref"


@pytest.mark.parametrize(
    "url",
    [
        "https://github.com/owner/repo/pull/123",
        "https://github.com/owner/repo/commit/3f5a1c0e9b7d2a4c6e8f0a1b3c5d7e9f1a2b3c4d",
        "https://example.com:8443/a/b?page=2#section",
        "https://8.8.8.8/report",
    ],
)
def test_public_https_artifact_refs_are_kept(url):
    assert _application(artifact_ref=url)["artifact_ref"] == url


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("surface", "nodot"),
        ("application_id", "has space"),
        ("application_id", "/abs/path"),
        ("outcome", "maybe"),
    ],
)
def test_application_receipt_rejects_bad_fields(field, value):
    with pytest.raises(SemanticPreferenceError) as exc:
        _application(**{field: value})
    assert exc.value.field == field


@pytest.mark.parametrize(
    ("field", "value", "error_field"),
    [
        ("trigger", "nightly", "trigger"),
        ("outcome", "applied", "outcome"),
        ("outcome", "ignored", "outcome"),
        ("corpus_ids", [], "corpus_id"),
        ("corpus_ids", ["bad id"], "corpus_id"),
        ("evidence_ref", "/var/lib/evidence.json", "evidence_ref"),
        ("evidence_ref", "https://user:pw@example.com/e", "evidence_ref"),
        ("scope_refs", ["x"] * 33, "scope_ref"),
    ],
)
def test_maintenance_receipt_rejects_bad_fields(field, value, error_field):
    with pytest.raises(SemanticPreferenceError) as exc:
        _maintenance(**{field: value})
    assert exc.value.field == error_field


@pytest.mark.parametrize("outcome", ["verified", "no_write_rationale", "failed"])
def test_maintenance_outcomes_are_loopx_s(outcome):
    assert _maintenance(outcome=outcome)["outcome"] == outcome


def test_maintenance_receipt_sorts_corpus_ids_and_digests():
    receipt = _maintenance(corpus_ids=["b", "a", "b"], scope_refs=["z", "y"])
    assert receipt["corpus_ids"] == ["a", "b"]
    assert receipt["scope_ref_digests"] == sorted([_sha16("z"), _sha16("y")])


def test_receipt_cli_errors_are_structured_with_exit_2():
    result = run_cli(
        "semantic_preference", "receipt", "--surface", SURFACE, "--application-id", "a",
        "--outcome", "applied", "--preference-ref", "r",
        "--artifact-ref", "https://u:p@example.com/x",
    )  # fmt: skip
    assert result.code == 2
    assert result.json["field"] == "artifact_ref"
    assert "u:p@" not in result.stdout
    missing = run_cli("semantic_preference", "receipt", "--surface", SURFACE)
    assert missing.code == 2
    assert missing.json["schema_version"] == "semantic_preference_error_v0"
    assert "Traceback" not in missing.stdout + missing.stderr


def test_receipts_write_nothing(django_assert_num_queries):
    with django_assert_num_queries(0):
        _application()
        _maintenance()


REFS = st.text(min_size=1, max_size=50).filter(lambda s: "\x00" not in s)


@given(st.lists(REFS, min_size=1, max_size=20))
def test_digests_never_contain_the_refs(refs):
    receipt = services.application_receipt(
        surface=SURFACE, application_id="a", outcome="applied", preference_refs=refs
    )
    assert all(DIGEST.match(d) for d in receipt["preference_ref_digests"])
    assert len(receipt["preference_ref_digests"]) == len(dict.fromkeys(refs))


@pytest.mark.parametrize(
    "ref",
    [
        "owner/repo#126",  # the natural ref for a PR host
        "https://127.0.0.1/x",  # loopback, as LoopX accepts
        "http://127.0.0.1:8000/pr/1",
        "https://localhost/pull/1",
        "github:owner/repo/pull/7",
        "review:leg#42/r-1",
    ],
)
def test_artifact_and_evidence_refs_take_loopx_public_safe_forms(ref):
    assert _application(artifact_ref=ref)["artifact_ref"] == ref
    assert _maintenance(evidence_ref=ref)["evidence_ref"] == ref


@pytest.mark.parametrize(
    "ref",
    ["file:///etc/passwd", "home/me/.ssh/id_rsa", "tmp/build.log", "a/../b", "C:/x", "ssh://h/x"],
)
def test_loopx_form_refs_that_name_local_paths_or_other_schemes_are_refused(ref):
    with pytest.raises(SemanticPreferenceError) as exc:
        _application(artifact_ref=ref)
    assert exc.value.field == "artifact_ref"


@pytest.mark.parametrize("corpus_id", ["Prefs", "team.prefs", "1prefs", "a" * 65])
def test_maintenance_corpus_ids_follow_loopx_rule(corpus_id):
    with pytest.raises(SemanticPreferenceError) as exc:
        _maintenance(corpus_ids=[corpus_id])
    assert exc.value.field == "corpus_id"
