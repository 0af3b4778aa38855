"""The ``openviking`` provider and the ``loopx-openviking`` extension against a real
OpenViking server on loopback (``make test-openviking`` starts it; see ``harness``).

Skipped in the main suite: the leg sets ``LOOPX_OPENVIKING_LEG=1`` and the
``OPENVIKING_*`` variables of the server it started.
"""

import json
import os
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

import pytest

import loopx_site.openviking_http as ov
from reward_memory import providers
from reward_memory.documents import experiments as experiment_documents
from reward_memory.providers import Binding, ProviderUnavailable, ProviderWrite
from reward_memory.providers.openviking import OpenVikingProvider
from reward_memory.services import routes
from tests.openviking.harness import free_port

pytestmark = pytest.mark.skipif(
    os.environ.get("LOOPX_OPENVIKING_LEG") != "1",
    reason="needs a real OpenViking server: run `make test-openviking`",
)

SURFACE = "issue_fix.pr_description"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def settings():
    return ov.Settings(
        base_url=os.environ["OPENVIKING_BASE_URL"],
        api_key=os.environ["OPENVIKING_API_KEY"],
        user_id=os.environ["OPENVIKING_USER_ID"],
        timeout_seconds=20,
    )


@pytest.fixture
def provider(settings):
    return OpenVikingProvider(settings)


@pytest.fixture
def goal():
    """A fresh Goal id per test, so tests never see each other's records."""
    return "goal-" + uuid.uuid4().hex[:12]


def binding_for(provider, settings, goal_id, agent_id="explorer", corpus="review_policy"):
    peer = provider.actor_peer_for(goal_id, agent_id)
    scope = f"{ov.peer_memory_root(settings.user_id, peer)}/reward_memory/{corpus}"
    return Binding(provider_id="openviking", scope_ref=scope, actor_peer_id=peer)


def put(provider, binding, key, summary):
    ref = provider.resource_ref(binding, surface=SURFACE, key=key)
    content = json.dumps({"candidate_ref": key, "summary": summary}).encode()
    result = provider.write(binding, ProviderWrite(ref, SURFACE, content, summary))
    return ref, content, result


@pytest.fixture
def requests_sent(monkeypatch):
    """Counts HTTP requests the client sends (wraps the real transport)."""
    sent = []
    real = ov.Client._once

    def counting(self, method, url, data, headers):
        sent.append(method)
        return real(self, method, url, data, headers)

    monkeypatch.setattr(ov.Client, "_once", counting)
    return sent


def test_preflight_reports_a_supported_server(provider, settings, goal):
    report = provider.preflight_report(binding_for(provider, settings, goal))
    assert report.status == "ready"
    assert report.version_supported is True
    preflight = provider.preflight(binding_for(provider, settings, goal))
    assert (preflight.status, preflight.index_present) == ("ready", False)


def test_write_wait_exact_readback_and_scoped_find(provider, settings, goal):
    binding = binding_for(provider, settings, goal)
    ref, content, result = put(provider, binding, "k1", "Prefer small focused patches")
    assert (result.status, result.resource_ref) == ("committed", ref)
    assert provider.readback(binding, ref) == content
    hits = provider.recall(binding, surface=SURFACE, query="small focused patches", limit=4)
    assert [h.resource_ref for h in hits] == [ref]
    assert hits[0].content == content
    assert provider.recall(binding, surface="other.surface", query="small patches", limit=4) == []
    assert provider.preflight(binding).index_present is True


def test_replace_then_find_returns_the_new_text(provider, settings, goal):
    binding = binding_for(provider, settings, goal)
    ref, _, _ = put(provider, binding, "k1", "Prefer small focused patches")
    _, newer, result = put(provider, binding, "k1", "Always add a regression test first")
    assert result.status == "committed"
    assert provider.readback(binding, ref) == newer
    hits = provider.recall(binding, surface=SURFACE, query="regression test first", limit=4)
    assert [(h.resource_ref, h.content) for h in hits] == [(ref, newer)]


def test_the_same_write_twice_is_one_record(provider, settings, goal):
    binding = binding_for(provider, settings, goal)
    ref, content, _ = put(provider, binding, "k1", "Prefer small focused patches")
    _, _, again = put(provider, binding, "k1", "Prefer small focused patches")
    assert again.status == "committed"
    hits = provider.recall(binding, surface=SURFACE, query="small focused patches", limit=4)
    assert [(h.resource_ref, h.content) for h in hits] == [(ref, content)]


def test_retire_then_find_is_empty(provider, settings, goal):
    binding = binding_for(provider, settings, goal)
    ref, _, _ = put(provider, binding, "k1", "Prefer small focused patches")
    provider.retire(binding, ref)
    assert provider.recall(binding, surface=SURFACE, query="small focused patches", limit=4) == []
    assert provider.readback(binding, ref) is None
    provider.retire(binding, ref)  # idempotent


def test_another_peer_cannot_see_the_record(provider, settings, goal):
    mine = binding_for(provider, settings, goal)
    ref, _, _ = put(provider, mine, "k1", "Prefer small focused patches")
    # The same Agent name in another Goal is another peer: its scoped find is empty.
    other_goal = binding_for(provider, settings, goal + "-other")
    assert other_goal.actor_peer_id != mine.actor_peer_id
    hits = provider.recall(other_goal, surface=SURFACE, query="small focused patches", limit=4)
    assert hits == []
    # The adapter never sends another peer's URI …
    with pytest.raises(ProviderUnavailable) as refused:
        provider.readback(other_goal, ref)
    assert refused.value.kind == "forbidden"
    # … and the server refuses it too when asked directly with the other actor peer.
    request = urllib.request.Request(
        settings.base_url + "/api/v1/content/read?" + urllib.parse.urlencode({"uri": ref}),
        headers={"X-API-Key": settings.api_key, ov.PEER_HEADER: other_goal.actor_peer_id},
    )
    with pytest.raises(urllib.error.HTTPError) as denied:
        urllib.request.urlopen(request, timeout=20)
    assert denied.value.code == 403
    # The owner still reads it.
    assert provider.readback(mine, ref) is not None


@pytest.mark.parametrize(
    "scope",
    [
        "viking://agent/{peer}/memories/reward_memory",
        "VIKING://AGENT/{peer}/memories/reward_memory",
        "viking://Agent/{peer}/memories/reward_memory",
    ],
)
def test_agent_targets_are_refused_without_a_request(
    provider, settings, goal, requests_sent, scope
):
    peer = provider.actor_peer_for(goal, "explorer")
    binding = Binding("openviking", scope.format(peer=peer), peer)
    ref = provider.resource_ref(binding, surface=SURFACE, key="k1")
    with pytest.raises(ProviderUnavailable) as refused:
        provider.write(binding, ProviderWrite(ref, SURFACE, b"{}", "x"))
    assert refused.value.kind == "forbidden"
    assert requests_sent == []


def test_user_path_without_peer_or_with_another_peer_is_refused_without_a_request(
    provider, settings, goal, requests_sent
):
    peer = provider.actor_peer_for(goal, "explorer")
    user = settings.user_id
    for scope, actor in [
        (f"viking://user/{user}/memories/reward_memory", peer),
        (f"viking://user/{user}/peers/{peer}/memories/reward_memory", "loopx-someone-else"),
        (f"viking://user/{user}/peers/{peer}/memories/reward_memory", None),
    ]:
        binding = Binding("openviking", scope, actor)
        with pytest.raises(ProviderUnavailable) as refused:
            provider.recall(binding, surface=SURFACE, query="x", limit=1)
        assert refused.value.kind == "forbidden"
    assert requests_sent == []


def test_canary_writes_and_reads_back_exactly(provider, settings, goal):
    binding = binding_for(provider, settings, goal)
    canary = provider.canary(binding, canary_ref="configure-goal-1")
    assert (canary.written, canary.readback_verified) == (True, True)
    assert canary.resource_ref_digest.startswith("sha256:")
    # Non-recallable: no module surface sees it.
    assert provider.recall(binding, surface=SURFACE, query="canary_ref", limit=4) == []


def test_server_down_fails_open(settings, goal):
    down = OpenVikingProvider(
        ov.Settings(
            base_url=f"http://127.0.0.1:{free_port()}",
            api_key=settings.api_key,
            user_id=settings.user_id,
            timeout_seconds=2,
            retries=1,
        ),
        sleep=lambda _s: None,
    )
    binding = binding_for(down, settings, goal)
    with pytest.raises(ProviderUnavailable) as failed:
        down.recall(binding, surface=SURFACE, query="x", limit=1)
    assert failed.value.kind == "unavailable"
    assert down.preflight(binding).status == "unavailable"
    with pytest.raises(ProviderUnavailable):
        down.canary(binding, canary_ref="c")


def test_registered_provider_reads_django_settings(settings, goal, monkeypatch):
    from django.conf import settings as django_settings

    monkeypatch.setattr(django_settings, "OPENVIKING_BASE_URL", settings.base_url)
    monkeypatch.setattr(django_settings, "OPENVIKING_API_KEY", settings.api_key)
    monkeypatch.setattr(django_settings, "OPENVIKING_USER_ID", settings.user_id)
    registered = providers.get("openviking")
    binding = binding_for(registered, settings, goal)
    assert registered.canary(binding, canary_ref="django-settings").readback_verified is True


# -- the loopx-openviking semantic-preference extension ---------------------------------


def _run_extension(command, request, settings_file, project="loopx-demo"):
    script = ROOT / "preferences" / "extensions" / "loopx_openviking.py"
    return subprocess.run(
        [
            sys.executable,
            str(script),
            command,
            "--settings",
            str(settings_file),
            "--project",
            project,
        ],
        input=json.dumps(request).encode(),
        capture_output=True,
        env={"PATH": os.environ.get("PATH", ""), "LANG": "C.UTF-8"},
        timeout=60,
        check=False,
    )


@pytest.fixture
def settings_file(settings, tmp_path):
    path = tmp_path / "openviking-provider.json"
    path.write_text(
        json.dumps(
            {
                "schema_version": "loopx_openviking_provider_settings_v0",
                "base_url": settings.base_url,
                "user_id": settings.user_id,
                "api_key": settings.api_key,
            }
        )
    )
    return path


def test_extension_recalls_from_the_project_peer_only(settings, settings_file):
    project = "project-" + uuid.uuid4().hex[:8]
    peer = ov.project_peer_token(project)
    client = ov.Client(settings)
    uri = f"{ov.peer_memory_root(settings.user_id, peer)}/preferences/pr-sections.md"
    text = "PR descriptions list Summary, Testing and Risk sections."
    client.write(uri, text, peer=peer, mode="create")
    request = {
        "schema_version": "semantic_preference_provider_request_v0",
        "protocol": "semantic_preference_provider_v0",
        "surface": SURFACE,
        "query": "PR description sections",
        "limit": 3,
        "context": {},
    }
    done = _run_extension("recall", request, settings_file, project)
    assert done.returncode == 0
    response = json.loads(done.stdout)
    assert response["items"] == [{"preference_ref": ov_ref(uri), "summary": text}]
    assert uri.encode() not in done.stdout
    other = _run_extension("recall", request, settings_file, project + "-other")
    assert json.loads(other.stdout)["items"] == []


def ov_ref(uri):
    import hashlib

    return "openviking:" + hashlib.sha256(uri.encode()).hexdigest()[:16]


def test_extension_doctor_is_healthy_and_fails_when_the_server_is_down(
    settings_file, tmp_path, settings
):
    request = {
        "schema_version": "semantic_preference_provider_doctor_request_v0",
        "protocol": "semantic_preference_provider_v0",
    }
    healthy = _run_extension("doctor", request, settings_file)
    assert healthy.returncode == 0
    assert json.loads(healthy.stdout)["status"] == "healthy"
    down = tmp_path / "down.json"
    doc = json.loads(settings_file.read_text())
    down.write_text(json.dumps({**doc, "base_url": f"http://127.0.0.1:{free_port()}"}))
    failed = _run_extension("doctor", request, down)
    assert failed.returncode != 0
    assert failed.stdout == b""


@pytest.mark.django_db
def test_the_recall_hook_runs_the_shipped_manifest_against_the_server(
    settings, settings_file, tmp_path
):
    """The real hook: shipped manifest (via a state file), subprocess, protocol parsing."""
    from preferences import services as preference_services

    project = "project-" + uuid.uuid4().hex[:8]
    peer = ov.project_peer_token(project)
    uri = f"{ov.peer_memory_root(settings.user_id, peer)}/preferences/tone.md"
    text = "Reviewer comments stay short and name the failing test."
    ov.Client(settings).write(uri, text, peer=peer, mode="create")
    shipped = json.loads((ROOT / "preferences/extensions/loopx-openviking.json").read_text())
    state = tmp_path / "state.json"
    extension = {
        **shipped,
        "entrypoint": [
            "python3",
            str(ROOT / "preferences/extensions/loopx_openviking.py"),
            "recall",
        ],
    }
    extension["doctor"] = [*extension["entrypoint"][:2], "doctor"]
    state.write_text(
        json.dumps(
            {
                "schema_version": "semantic_preference_extension_state_v0",
                "extensions": [{**extension, "active": True}],
            }
        )
    )
    config = {
        "schema_version": "semantic_preference_hook_config_v0",
        "enabled": True,
        "provider": {
            "id": "openviking",
            "extension_id": "loopx-openviking",
            "extension_state_file": str(state),
            "args": ["--settings", str(settings_file), "--project", project],
        },
        "surfaces": {SURFACE: {"query": "reviewer comments failing test", "limit": 3}},
    }
    result = preference_services.recall(config, project=project, surface=SURFACE, execute=True)
    assert result["status"] == "completed", json.dumps(result)
    assert [item["summary"] for item in result["items"]] == [text]
    assert uri not in json.dumps(result)
    doctor = preference_services.doctor(config, project=project, execute=True)
    assert doctor["status"] == "ready", json.dumps(doctor)


# -- configure_goal: an OpenViking-backed experiment, canary against the real server ----


def test_configure_goal_with_an_openviking_config_writes_a_canary_and_reads_it_back(
    db, settings, goal, monkeypatch
):
    """The operator's ``configure_goal --execute`` for an Agent whose private experiment
    config binds an OpenViking corpus: preflight on preview, then a fresh canary written
    to the Agent's own peer and read back byte for byte before the binding commits."""
    from django.conf import settings as django_settings

    from loopx_site.core import services as core
    from reward_memory import services as rm
    from reward_memory.models import Corpus
    from tests.reward_memory import factories as f

    monkeypatch.setattr(django_settings, "OPENVIKING_BASE_URL", settings.base_url)
    monkeypatch.setattr(django_settings, "OPENVIKING_API_KEY", settings.api_key)
    monkeypatch.setattr(django_settings, "OPENVIKING_USER_ID", settings.user_id)
    core.register_goal(goal_id=goal, agent_ids=["explorer"], execute=True)
    peer = providers.get("openviking").actor_peer_for(goal, "explorer")
    scope = f"{ov.peer_memory_root(settings.user_id, peer)}/reward_memory/review_policy"
    rm.register_corpus(
        corpus=f.corpus_doc(
            "ov-review-policy",
            provider_id="openviking",
            scope_ref=scope,
            agents=[(goal, "explorer")],
            visibility="private",
        ),
        execute=True,
    )
    corpus = Corpus.objects.get(corpus_id="ov-review-policy")
    f.write_config("experiments/ov.json", f.experiment_config([corpus]))

    preview = experiment_documents.configuration(
        rm.configure_goal(
            goal_id=goal, agent_id="explorer", config_path="experiments/ov.json", execute=False
        )
    )
    assert preview["status"] == "preflight_ready", json.dumps(preview)
    assert not routes.experiment_route(goal, "explorer").available

    done = experiment_documents.configuration(
        rm.configure_goal(
            goal_id=goal, agent_id="explorer", config_path="experiments/ov.json", execute=True
        )
    )
    assert done["status"] not in ("unavailable", "canary_readback_failed"), json.dumps(done)
    route = routes.experiment_route(goal, "explorer")
    assert route.available, route.status
    assert route.receipt["exact_readback_verified"] is True
    assert peer not in json.dumps(done)  # the peer token never appears in the public document


# -- deletes that arrive (issue 33): retire reaches the real server ------------------------


def _activated_at_the_real_server(settings, goal, monkeypatch):
    """A private OpenViking corpus for the Agent's own peer, the Goal configured, one
    ingest activated (written and read back at the server): (record, binding, summary)."""
    from django.conf import settings as django_settings

    from loopx_site.core import services as core
    from reward_memory import services as rm
    from reward_memory.models import Corpus, MemoryRecord
    from tests.reward_memory import factories as f

    monkeypatch.setattr(django_settings, "OPENVIKING_BASE_URL", settings.base_url)
    monkeypatch.setattr(django_settings, "OPENVIKING_API_KEY", settings.api_key)
    monkeypatch.setattr(django_settings, "OPENVIKING_USER_ID", settings.user_id)
    core.register_goal(goal_id=goal, agent_ids=["explorer"], execute=True)
    provider = providers.get("openviking")
    peer = provider.actor_peer_for(goal, "explorer")
    scope = f"{ov.peer_memory_root(settings.user_id, peer)}/reward_memory/prefs"
    rm.register_corpus(
        corpus=f.corpus_doc(
            "ov-prefs",
            provider_id="openviking",
            scope_ref=scope,
            agents=[(goal, "explorer")],
            visibility="private",
        ),
        standing_policies=[f.policy_doc("ov-prefs")],
        execute=True,
    )
    corpus = Corpus.objects.get(corpus_id="ov-prefs")
    f.write_config("experiments/ov-del.json", f.experiment_config([corpus]))
    rm.configure_goal(
        goal_id=goal, agent_id="explorer", config_path="experiments/ov-del.json", execute=True
    )
    from django.contrib.auth import get_user_model

    from reward_memory import principals

    for name in ("owner", "retirer"):  # the corpus actors, as operator accounts
        user, _ = get_user_model().objects.get_or_create(username=name, defaults={"is_staff": True})
        principals.grant_operator_permissions(user)
    rm.grant_checkpoint(  # the candidate's source holds its role through a server record
        checkpoint_id=f.ROLE_CHECKPOINT_ID, project=f.PROJECT, actor="user:maint-1",
        role="maintainer", action_scopes=[], operator=f.op(f.OWNER), execute=True,
    )  # fmt: skip
    receipt = f.ingested(
        event=f.scoped_event(corpus_id="ov-prefs"), goal_id=goal, agent_id="explorer",
        execute=True,
    )  # fmt: skip
    assert receipt["status"] == "activated", json.dumps(receipt)
    record = MemoryRecord.objects.get(record_ref=receipt["record_ref"])
    binding = Binding("openviking", scope, peer)
    summary = record.summary
    found = provider.recall(binding, surface=record.surface, query=summary, limit=10)
    assert record.provider_resource_ref in [i.resource_ref for i in found]
    return record, binding, summary


def test_a_retired_record_is_deleted_at_the_real_server_and_no_longer_found(
    db, settings, goal, monkeypatch
):
    """Retire: the outbox's first attempt sends the DELETE with the record's own peer and
    confirms it by search."""
    from reward_memory import services as rm
    from reward_memory.models import ProviderDeletion
    from tests.reward_memory import factories as f

    record, binding, summary = _activated_at_the_real_server(settings, goal, monkeypatch)
    provider = providers.get("openviking")
    rm.retire_record(record_ref=record.record_ref, principal=f.op(f.RETIRER))

    row = ProviderDeletion.objects.get(record=record)
    assert (row.state, row.failure_kind) == ("confirmed", ""), (row.state, row.failure_kind)
    found = provider.recall(binding, surface=record.surface, query=summary, limit=10)
    assert record.provider_resource_ref not in [i.resource_ref for i in found]
    assert provider.readback(binding, record.provider_resource_ref) is None


def test_an_erased_goals_record_is_deleted_at_the_real_server_and_no_longer_found(
    db, settings, goal, monkeypatch, django_capture_on_commit_callbacks
):
    """``goal erase``: the record's text is scrubbed before the commit; the delete's first
    attempt (at the commit) still verifies by searching for that text."""
    from loopx_site.core import erasure
    from reward_memory.models import ProviderDeletion

    record, binding, summary = _activated_at_the_real_server(settings, goal, monkeypatch)
    provider = providers.get("openviking")
    with django_capture_on_commit_callbacks(execute=True):
        erasure.erase(goal_id=goal, execute=True)
    row = ProviderDeletion.objects.get(record=record)
    assert (row.state, row.failure_kind) == ("confirmed", ""), (row.state, row.failure_kind)
    found = provider.recall(binding, surface=record.surface, query=summary, limit=10)
    assert record.provider_resource_ref not in [i.resource_ref for i in found]
    assert provider.readback(binding, record.provider_resource_ref) is None
