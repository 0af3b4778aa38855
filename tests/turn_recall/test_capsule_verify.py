"""A host verifies the signed Turn capsule: ``turn verify-capsule`` and
``POST /api/v1/turn-capsules/verify/`` answer ``valid`` / ``invalid`` with a reason
(``tampered``, ``expired``, ``scope_mismatch``, ``malformed``) and never reveal the key."""

import copy
import datetime as dt
import hashlib
import hmac
import json

import pytest
from django.conf import settings

from loopx_site.core.canonical import canonical_bytes
from tests.factories import AgentFactory
from tests.helpers import run_cli
from tests.turn_recall.test_turn_start import _failed_packet
from turn_recall import capsule
from turn_recall import contracts as c

URL = "/api/v1/turn-capsules/verify/"


@pytest.fixture
def signed(db, todo, monkeypatch):
    AgentFactory(goal=todo.goal, agent_id="reviewer")
    return _failed_packet(db, monkeypatch)  # a preference store that cannot be read


def _verify_cli(tmp_path, doc, agent_id="author"):
    path = tmp_path / "capsule.json"
    path.write_text(json.dumps(doc))
    return run_cli("turn", "verify-capsule", "--goal-id", "demo", "--agent-id", agent_id,
                   "--capsule-file", str(path))  # fmt: skip


def _secrets(doc) -> list[str]:
    """Everything that would let a reader forge a capsule."""
    key = capsule._key()
    unsigned = {k: v for k, v in doc.items() if k != "signature"}
    return [
        settings.SECRET_KEY,
        key.hex(),
        hmac.new(key, canonical_bytes(unsigned), hashlib.sha256).hexdigest(),
    ]


def test_an_unmodified_capsule_is_valid_on_the_cli_and_the_api(signed, tmp_path, host_client):
    cli = _verify_cli(tmp_path, signed)
    assert cli.code == 0
    assert (cli.json["status"], cli.json["valid"], cli.json["reason"]) == ("valid", True, None)
    assert cli.json["schema_version"] == c.CAPSULE_VERIFICATION_SCHEMA
    assert cli.json["expires_at"] == signed["expires_at"]
    api = host_client("demo", "author").post(URL, {"capsule": signed}, format="json")
    assert api.status_code == 200
    assert api.json()["status"] == "valid"


def test_a_tampered_capsule_is_invalid_tampered(signed, tmp_path, host_client):
    edited = copy.deepcopy(signed)
    edited["observations"][0]["held_actions"] = "nothing"
    assert _verify_cli(tmp_path, edited).json["reason"] == "tampered"
    moved = copy.deepcopy(signed) | {"agent_id": "reviewer"}  # a re-scoped capsule
    got = host_client("demo", "reviewer").post(URL, {"capsule": moved}, format="json")
    assert (got.json()["status"], got.json()["reason"]) == ("invalid", "tampered")
    assert _verify_cli(tmp_path, {"schema_version": "x"}).json["reason"] == "malformed"


def test_an_expired_capsule_is_invalid_expired(signed, tmp_path, frozen_clock):
    frozen_clock.advance(dt.timedelta(seconds=c.CAPSULE_TTL_SECONDS - 1))
    assert _verify_cli(tmp_path, signed).json["status"] == "valid"
    frozen_clock.advance(dt.timedelta(seconds=1))
    out = _verify_cli(tmp_path, signed).json
    assert (out["status"], out["reason"]) == ("invalid", "expired")


def test_a_capsule_for_another_agent_is_scope_mismatch(signed, tmp_path, host_client):
    cli = _verify_cli(tmp_path, signed, agent_id="reviewer")
    assert (cli.json["status"], cli.json["reason"]) == ("invalid", "scope_mismatch")
    assert (cli.json["capsule_goal_id"], cli.json["capsule_agent_id"]) == ("demo", "author")
    api = host_client("demo", "reviewer").post(URL, {"capsule": signed}, format="json")
    assert (api.status_code, api.json()["reason"]) == (200, "scope_mismatch")


def test_the_key_never_appears_in_any_output(signed, tmp_path, host_client):
    edited = copy.deepcopy(signed) | {"issued_at": "2020-01-01T00:00:00Z"}
    outputs = []
    for doc, agent in ((signed, "author"), (edited, "author"), (signed, "reviewer")):
        cli = _verify_cli(tmp_path, doc, agent)
        outputs += [cli.stdout, cli.stderr]
        api = host_client("demo", agent).post(URL, {"capsule": doc}, format="json")
        outputs.append(api.content.decode())
    text = run_cli("turn", "verify-capsule", "--goal-id", "demo", "--agent-id", "author",
                   "--capsule-file", "-", "--format", "text", stdin=json.dumps(edited))  # fmt: skip
    outputs += [text.stdout, text.stderr]
    for secret in _secrets(signed):
        assert not any(secret in out for out in outputs)
    assert all('"key_revealed":true' not in out for out in outputs)


def test_a_bad_capsule_file_is_a_structured_error(db, todo, tmp_path):
    path = tmp_path / "capsule.json"
    path.write_text("{not json")
    out = run_cli("turn", "verify-capsule", "--goal-id", "demo", "--agent-id", "author",
                  "--capsule-file", str(path))  # fmt: skip
    assert out.code == 2
    assert out.json["ok"] is False


def test_an_extra_member_of_the_signature_object_is_tampered(signed, tmp_path, host_client):
    padded = copy.deepcopy(signed)
    padded["signature"]["note"] = "added after signing"
    assert _verify_cli(tmp_path, padded).json["reason"] == "tampered"
    got = host_client("demo", "author").post(URL, {"capsule": padded}, format="json")
    assert (got.json()["status"], got.json()["reason"]) == ("invalid", "tampered")


def test_verifying_for_an_unregistered_agent_is_404_like_every_other_endpoint(
    signed, tmp_path, host_client
):
    cli = _verify_cli(tmp_path, signed, agent_id="nobody")
    assert (cli.code, cli.json["code"]) == (2, "agent_not_registered")
    api = host_client("demo").post(URL, {"capsule": signed, "agent_id": "nobody"}, format="json")
    assert (api.status_code, api.json()["code"]) == (404, "agent_not_registered")
