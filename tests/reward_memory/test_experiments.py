"""The experiment registry: config v1 rules, configure_goal (preflight, canary readback),
experiment-status, digest drift, explicit off and the ingest route."""

import copy
import json
import subprocess

import pytest

from loopx_site.core.errors import DomainError
from reward_memory import experiment_config as cfg
from reward_memory import services
from reward_memory.documents import experiments as experiment_documents
from reward_memory.errors import RewardMemoryError
from reward_memory.models import ExperimentBinding, LocalProviderDocument, MemoryRecord
from reward_memory.services import routes
from tests.factories import AgentFactory
from tests.helpers import run_cli
from tests.reward_memory import factories as f

CONFIG = "experiments/private.json"
BASE = "/api/v1/reward-memory"


@pytest.fixture
def prefs(agents, double):
    return f.register("prefs", provider_id="double", agents=[("demo", "author")], route=False)


def _status_document(**route):
    """The Agent's ``reward_memory_experiment_status_v1`` as the API and the command
    answer it (the service returns the route; ``documents.experiments`` renders it)."""
    return experiment_documents.status(services.experiment_status(**route))


def _config(*corpora, **kw) -> dict:
    return f.experiment_config(corpora, **kw)


def _configure(execute=False, agent="author", path=CONFIG):
    return experiment_documents.configuration(
        services.configure_goal(goal_id="demo", agent_id=agent, config_path=path, execute=execute)
    )


# -- config v1 rules --------------------------------------------------------------------------
def test_omitted_automation_flags_default_true_with_provenance_and_explicit_false_is_kept(
    db, prefs
):
    omitted = cfg.parse(_config(prefs))
    assert omitted.automation == {
        "automatic_recall": True,
        "automatic_ingest": True,
        "fail_open": True,
    }
    assert set(omitted.automation_intent.values()) == {"default_on_enable"}
    explicit = cfg.parse(_config(prefs, automation={"automatic_ingest": False}))
    assert explicit.automation["automatic_ingest"] is False
    assert explicit.automation["automatic_recall"] is True
    assert explicit.automation_intent == {
        "automatic_recall": "default_on_enable",
        "automatic_ingest": "explicit",
        "fail_open": "default_on_enable",
    }


def _mutate(doc, path, value):
    target = doc
    for key in path[:-1]:
        target = target[key]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return doc


@pytest.mark.parametrize(
    ("path", "value", "code", "field"),
    [
        (("schema_version",), "reward_memory_experiment_config_v0", "config_schema_unsupported",
         "schema_version"),
        (("raw_notes",), "x", "config_invalid", "raw_notes"),
        (("surfaces", 0, "corpus_ids"), ["prefs", "ghost"], "config_invalid",
         "surfaces.0.corpus_ids"),
        (("surfaces", 0, "ingest_corpus_id"), "ghost", "config_invalid",
         "surfaces.0.ingest_corpus_id"),
        (("surfaces", 0, "ingest_corpus_id"), KeyError, "config_invalid",
         "surfaces.0.ingest_corpus_id"),
        (("surfaces", 0, "recall_profile"), KeyError, "config_invalid",
         "surfaces.0.recall_profile"),
        (("surfaces", 0, "recall_profile", "max_queries"), 2, "config_invalid",
         "surfaces.0.recall_profile.max_queries"),
        (("automation", ), {"automatic_recall": "yes"}, "config_invalid",
         "automation.automatic_recall"),
        (("project_provider_binding", "corpus_scopes"), [], "config_invalid",
         "project_provider_binding.corpus_scopes"),
    ],
)  # fmt: skip
def test_each_document_rule_refuses_with_a_named_field(db, prefs, path, value, code, field):
    doc = _mutate(_config(prefs), list(path), value)
    with pytest.raises(RewardMemoryError) as exc:
        cfg.parse(doc)
    assert (exc.value.code, exc.value.field) == (code, field)


def test_surface_corpora_must_agree_and_match_their_registered_scope(db, prefs):
    hard = f.register(
        "policy", provider_id="double", memory_class="hard_policy",
        agents=[("demo", "author")], route=False,
    )  # fmt: skip
    doc = _config(prefs)
    doc["project_provider_binding"]["corpus_scopes"].append(
        {"corpus_id": "policy", "scope_ref": hard.provider_scope_ref}
    )
    doc["corpora"].append({"corpus": {"corpus_id": "policy"}})
    doc["surfaces"][0]["corpus_ids"] = ["prefs", "policy"]
    with pytest.raises(RewardMemoryError) as exc:
        cfg.check_registered(cfg.parse(doc))
    assert "disagree on class" in exc.value.message

    drifted = _config(prefs)
    drifted["project_provider_binding"]["corpus_scopes"][0]["scope_ref"] = "double:elsewhere"
    with pytest.raises(RewardMemoryError) as exc:
        cfg.check_registered(cfg.parse(drifted))
    assert exc.value.field == "project_provider_binding.corpus_scopes"
    assert "double:elsewhere" not in exc.value.message

    other_provider = _config(prefs)
    other_provider["project_provider_binding"]["provider_id"] = "local"
    with pytest.raises(RewardMemoryError) as exc:
        cfg.check_registered(cfg.parse(other_provider))
    assert exc.value.field == "project_provider_binding.provider_id"


def test_a_config_inside_a_git_work_tree_must_be_ignored(db, prefs, experiment_config_root):
    def git(*argv):
        subprocess.run(["git", *argv], cwd=experiment_config_root, check=True, capture_output=True)

    git("init", "-q")
    f.write_config(CONFIG, _config(prefs))
    with pytest.raises(DomainError) as exc:
        _configure()
    assert (exc.value.code, exc.value.field) == ("config_not_ignored", "reward_memory_config")
    (experiment_config_root / ".gitignore").write_text("experiments/\n")
    assert _configure()["status"] == "preflight_ready"


def test_a_config_path_outside_the_checkout_is_refused(db, prefs, tmp_path):
    with pytest.raises(RewardMemoryError) as exc:
        _configure(path=str(tmp_path / "elsewhere.json"))
    assert exc.value.field == "reward_memory_config"
    assert str(tmp_path) not in exc.value.message


# -- configure_goal ---------------------------------------------------------------------------
def test_preview_runs_only_the_provider_preflight_and_commits_nothing(db, prefs, double):
    f.write_config(CONFIG, _config(prefs))
    preview = _configure()
    assert preview["status"] == "preflight_ready"
    assert preview["binding_committed"] is False
    assert preview["executed"] is False
    assert double.calls == ["preflight"]
    assert not ExperimentBinding.objects.exists()
    double.available = False
    assert _configure()["status"] == "unavailable"
    assert not ExperimentBinding.objects.exists()


def test_execute_commits_the_binding_after_a_fresh_non_recallable_canary(db, prefs, double):
    f.write_config(CONFIG, _config(prefs))
    done = _configure(execute=True)
    assert done["status"] == "configured"
    assert done["binding_committed"] is True
    assert double.calls == ["write", "readback"]
    [(_, canary)] = double.documents.items()
    assert canary["recallable"] is False
    row = ExperimentBinding.objects.get()
    assert (row.enabled, row.experimental, row.config_path) == (True, True, CONFIG)
    assert row.agent_allowlist == ["author"]
    assert row.receipts["author"]["status"] == "verified"
    assert row.receipts["author"]["config_digest"] == row.config_digest
    again = _configure(execute=True)  # a fresh canary every time, not a replay
    assert again["status"] == "configured"
    assert len(double.documents) == 2
    status = _status_document(goal_id="demo", agent_id="author")
    assert (status["status"], status["available"]) == ("available", True)
    assert status["automatic_recall"] is status["automatic_ingest"] is True
    assert status["automation_intent"]["automatic_ingest"] == "default_on_enable"
    assert status["recall_profile_ids"] == ["issue_fix_pr_description_v1"]
    assert (status["corpus_count"], status["surface_count"]) == (1, 1)
    # LoopX's words for the route (issue 23: reward.experiment-status)
    route = status["config_runtime_route"]
    assert (route["registry_role"], route["goal_source"]) == ("project-local", "registry.goals")
    assert (status["experimental"], status["adapter"], status["corpus_id"]) == (
        True,
        "scoped_feedback",
        "prefs",
    )
    text = json.dumps(status)
    assert prefs.provider_scope_ref not in text
    assert "experiments/" not in text


def test_canary_readback_mismatch_commits_no_binding(db, prefs, double):
    f.write_config(CONFIG, _config(prefs))
    double.tamper_readback = True
    result = _configure(execute=True)
    assert result["status"] == "canary_readback_failed"
    assert result["binding_committed"] is False
    assert not ExperimentBinding.objects.exists()
    status = _status_document(goal_id="demo", agent_id="author")
    assert status["status"] == "disabled"


def test_the_local_provider_canary_reads_back_exact_bytes_and_is_never_recallable(db, agents):
    local = f.register("prefs", agents=[("demo", "author")], route=False)
    f.write_config(CONFIG, _config(local))
    assert _configure()["status"] == "preflight_ready"
    assert _configure(execute=True)["status"] == "configured"
    doc = LocalProviderDocument.objects.get()
    assert doc.recallable is False


def test_one_private_config_binds_exactly_one_agent(db, agents, double):
    private = f.register(
        "mine", provider_id="double", visibility="private",
        agents=[("demo", "author")], route=False,
    )  # fmt: skip
    f.write_config(CONFIG, _config(private))
    assert _configure(execute=True)["status"] == "configured"
    double.reset_calls()
    with pytest.raises(RewardMemoryError) as exc:
        _configure(agent="reviewer")
    assert exc.value.code == "config_binds_one_agent"
    assert double.call_count == 0
    assert ExperimentBinding.objects.get().agent_allowlist == ["author"]


def test_an_unregistered_agent_is_refused_before_any_provider_call(db, prefs, double):
    f.write_config(CONFIG, _config(prefs))
    with pytest.raises(DomainError) as exc:
        _configure(agent="ghost", execute=True)
    assert exc.value.code == "agent_not_registered"
    assert double.call_count == 0


# -- drift, invalid config, explicit off ------------------------------------------------------
def _enabled(prefs, **kw):
    f.write_config(CONFIG, _config(prefs, **kw))
    assert _configure(execute=True)["status"] == "configured"


def test_config_digest_drift_makes_automation_unavailable_but_ordinary_work_continues(
    db, prefs, double
):
    _enabled(prefs)
    doc = _config(prefs, automation={"automatic_recall": True})  # same route, new bytes
    f.write_config(CONFIG, doc)
    double.reset_calls()
    status = _status_document(goal_id="demo", agent_id="author")
    assert (status["status"], status["available"]) == ("enablement_stale", False)
    assert status["reason_code"] == "config_digest_missing_or_drifted"
    assert (status["automatic_recall"], status["automatic_ingest"]) == (False, False)
    with pytest.raises(RewardMemoryError) as exc:
        f.ingested(event=f.scoped_event(), goal_id="demo", agent_id="author", execute=True)
    assert exc.value.code == "experiment_route_unavailable"
    planned = f.ingested(event=f.scoped_event(), goal_id="demo", agent_id="author")
    assert planned["status"] == "planned"  # ordinary (non-experiment) work still answers
    assert double.call_count == 0
    assert not MemoryRecord.objects.exists()


def test_a_missing_receipt_makes_automation_unavailable(db, prefs):
    _enabled(prefs)
    ExperimentBinding.objects.update(receipts={})
    status = _status_document(goal_id="demo", agent_id="author")
    assert status["status"] == "enablement_stale"
    assert status["available"] is False


def test_a_non_v1_config_is_unavailable_with_both_flags_false(db, prefs):
    _enabled(prefs)
    doc = _config(prefs)
    doc["schema_version"] = "reward_memory_experiment_config_v0"
    f.write_config(CONFIG, doc)
    status = _status_document(goal_id="demo", agent_id="author")
    assert (status["status"], status["available"]) == ("config_invalid", False)
    assert (status["automatic_recall"], status["automatic_ingest"]) == (False, False)


def test_explicit_off_stops_reconciliation_with_zero_provider_calls(db, prefs, double):
    _enabled(prefs, automation={"automatic_ingest": False})
    status = _status_document(goal_id="demo", agent_id="author")
    assert status["available"] is True
    assert status["automatic_ingest"] is False
    assert status["automation_intent"]["automatic_ingest"] == "explicit"
    double.reset_calls()
    summary = services.reconcile_pending_ingests(goal_id="demo", agent_id="author")
    assert summary.skipped == "automatic_ingest_off"
    assert double.call_count == 0


def test_ingest_execute_needs_the_surface_routed_to_this_corpus(db, prefs, double):
    _enabled(prefs)
    receipt = f.ingested(event=f.scoped_event(), goal_id="demo", agent_id="author", execute=True)
    assert receipt["status"] == "activated"
    other = f.register("other", provider_id="double", agents=[("demo", "author")], route=False)
    with pytest.raises(RewardMemoryError) as exc:  # same surface, not its ingest corpus
        f.ingested(
            event=f.scoped_event("e2", corpus_id=other.corpus_id),
            goal_id="demo",
            agent_id="author",
            execute=True,
        )
    assert exc.value.code == "experiment_route_unavailable"


def test_experiment_route_is_the_selector_other_apps_call(db, prefs):
    assert routes.experiment_route("demo", "author").status == "disabled"
    _enabled(prefs)
    route = routes.experiment_route("demo", "author", f.SURFACE)
    assert route.available
    surface = route.surface(f.SURFACE)
    assert (surface.ingest_corpus_id, surface.corpus_ids) == ("prefs", ("prefs",))
    assert surface.recall_profile["mode"] == "function_boundary"
    assert route.surface("agent_workflow.turn_admission") is None
    assert routes.experiment_route("demo", "author", "other.surface").status == (
        "surface_not_configured"
    )
    assert routes.experiment_route("demo", "reviewer").status == "agent_not_enabled"


# -- CLI and API ------------------------------------------------------------------------------
def test_configure_goal_command_previews_executes_and_renders_text(db, prefs, double):
    f.write_config(CONFIG, _config(prefs))
    argv = ["configure_goal", "--goal-id", "demo", "--reward-memory-config", CONFIG,
            "--reward-memory-agent", "author"]  # fmt: skip
    preview = run_cli(*argv)
    assert (preview.code, preview.json["status"]) == (0, "preflight_ready")
    assert not ExperimentBinding.objects.exists()
    text = run_cli(*argv, "--format", "text")
    assert "status: preflight_ready" in text.stdout
    done = run_cli(*argv, "--execute")
    assert done.json["status"] == "configured"
    bad = run_cli(*argv[:-1], "ghost")
    assert (bad.code, bad.json["status"], bad.json["code"]) == (
        2,
        "invalid_request",
        "agent_not_registered",
    )
    status = run_cli(
        "reward_memory", "experiment-status", "--goal-id", "demo", "--agent-id", "author"
    )
    assert status.json["status"] == "available"


def test_experiment_status_api_equals_the_cli(db, prefs, host_client):
    _enabled(prefs)
    api = host_client("demo", "author").get(f"{BASE}/experiments/demo/author/status/")
    assert api.status_code == 200
    cli = run_cli("reward_memory", "experiment-status", "--goal-id", "demo", "--agent-id", "author")
    assert api.json() == cli.json
    assert api.json()["available"] is True


def test_a_second_goal_with_the_same_agent_name_is_not_enabled(db, prefs):
    _enabled(prefs)
    other = AgentFactory(goal__goal_id="other", agent_id="author")
    assert other.goal.goal_id == "other"
    status = _status_document(goal_id="other", agent_id="author")
    assert status["status"] == "disabled"
    assert copy.deepcopy(status)["available"] is False


def _status(agent):
    return _status_document(goal_id="demo", agent_id=agent)["status"]


def test_enabling_a_second_agent_with_its_own_private_config_leaves_the_first_routed(
    db, agents, double
):
    a = f.register(
        "mine-a", provider_id="double", visibility="private", agents=[("demo", "author")],
        route=False,
    )  # fmt: skip
    b = f.register(
        "mine-b", provider_id="double", visibility="private", surfaces=["other_module.summary"],
        agents=[("demo", "reviewer")], route=False,
    )  # fmt: skip
    f.write_config("experiments/a.json", _config(a))
    f.write_config("experiments/b.json", _config(b))
    first = _configure(execute=True, agent="author", path="experiments/a.json")
    assert first["status"] == "configured"
    assert first["replaces_binding"] is None
    before = ExperimentBinding.objects.get(agent__agent_id="author")
    preview = _configure(agent="reviewer", path="experiments/b.json")
    assert preview["replaces_binding"] is None  # the reviewer has no binding to replace
    done = _configure(execute=True, agent="reviewer", path="experiments/b.json")
    assert done["status"] == "configured"
    # Agent A's route is untouched: same row, same revision, pointer, digest and receipt
    after = ExperimentBinding.objects.get(agent__agent_id="author")
    assert (after.revision, after.config_digest, after.receipts) == (
        before.revision,
        before.config_digest,
        before.receipts,
    )
    assert (_status("author"), _status("reviewer")) == ("available", "available")
    assert ExperimentBinding.objects.count() == 2
    assert routes.experiment_route("demo", "author").surface(f.SURFACE).ingest_corpus_id == (
        "mine-a"
    )


def test_two_agents_on_one_shared_config_each_hold_their_own_binding(db, agents, double):
    shared = f.register(
        "shared", provider_id="double", agents=[("demo", "author"), ("demo", "reviewer")],
        route=False,
    )  # fmt: skip
    f.write_config("experiments/shared.json", _config(shared))
    for agent in ("author", "reviewer"):
        _configure(execute=True, agent=agent, path="experiments/shared.json")
    rows = ExperimentBinding.objects.order_by("agent__agent_id")
    assert [r.agent_allowlist for r in rows] == [["author"], ["reviewer"]]
    assert [list(r.receipts) for r in rows] == [["author"], ["reviewer"]]


def test_replacing_an_agents_own_binding_is_named_in_the_preview_and_the_result(db, agents, double):
    a = f.register("prefs", provider_id="double", agents=[("demo", "author")], route=False)
    f.write_config("experiments/one.json", _config(a))
    f.write_config("experiments/two.json", _config(a, automation={"automatic_ingest": False}))
    _configure(execute=True, agent="author", path="experiments/one.json")
    old = ExperimentBinding.objects.get()
    same = _configure(agent="author", path="experiments/one.json")
    assert same["replaces_binding"] is None  # a re-verification replaces nothing
    preview = _configure(agent="author", path="experiments/two.json")
    expected = {
        "agent_id": "author",
        "binding_revision": old.revision,
        "config_digest": old.config_digest,
        "new_config_digest": preview["config_digest"],
        "config_pointer_changed": True,
        "enabled": True,
    }
    assert preview["replaces_binding"] == expected
    assert ExperimentBinding.objects.get().revision == old.revision  # a preview writes nothing
    done = _configure(execute=True, agent="author", path="experiments/two.json")
    assert done["replaces_binding"] == expected
    assert done["binding_revision"] == old.revision + 1


def test_configure_goal_command_names_the_replaced_binding(db, agents, double):
    a = f.register("prefs", provider_id="double", agents=[("demo", "author")], route=False)
    f.write_config("experiments/one.json", _config(a))
    f.write_config("experiments/two.json", _config(a, automation={"automatic_recall": False}))
    _configure(execute=True, agent="author", path="experiments/one.json")
    argv = ("configure_goal", "--goal-id", "demo", "--reward-memory-agent", "author")
    done = run_cli(*argv, "--reward-memory-config", "experiments/two.json")
    assert done.code == 0
    assert done.json["replaces_binding"]["agent_id"] == "author"


def test_the_admin_shows_the_binding_read_only_without_the_config_path(db, prefs, admin_client):
    _enabled(prefs)
    row = ExperimentBinding.objects.get()
    page = admin_client.get(f"/admin/reward_memory/experimentbinding/{row.pk}/change/")
    assert page.status_code == 200
    body = page.content.decode()
    assert row.config_digest in body
    assert CONFIG not in body
    assert admin_client.get("/admin/reward_memory/experimentbinding/add/").status_code == 403
    assert admin_client.get("/admin/reward_memory/reflectioncandidate/").status_code == 200


def test_experiment_status_of_an_unconfigured_agent_has_loopx_base_and_our_host_coverage(db, agent):
    # the leg's reward.experiment-status/unconfigured: LoopX's base keys, nothing of the
    # config summary, and the host lifecycles this service really wires
    status = _status_document(goal_id="demo", agent_id="author")
    assert (status["status"], status["available"], status["experimental"]) == (
        "disabled",
        False,
        False,
    )
    for key in ("binding_revision", "reason_code", "corpus_ids", "provider_id", "user_gate"):
        assert key not in status
    assert [h["host_id"] for h in status["host_coverage"]] == [
        "agent_turn_recall",
        "module_boundary_hook",
    ]
    assert {h["automatic_ingest"] for h in status["host_coverage"]} == {
        "connected_post_settlement",
        "connected",
    }
