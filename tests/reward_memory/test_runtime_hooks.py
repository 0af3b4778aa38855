"""Automatic hooks at declared module boundaries: recall/ingest only when the Agent's
experiment has the flag on; off (explicit false included) → zero provider calls."""

import json

import pytest

from reward_memory import services
from reward_memory.documents import boundary_hooks as hook_documents
from reward_memory.errors import RewardMemoryError
from reward_memory.models import MemoryRecord
from tests.helpers import run_cli
from tests.reward_memory import factories as f

BOUNDARY = "reviewer_artifact.summary"
CONFIG = "experiments/hooks.json"
QUERY = "PR descriptions user-visible effect"


@pytest.fixture
def review_corpus(agents, double):
    return f.register(
        "review", provider_id="double", surfaces=[BOUNDARY],
        agents=[("demo", "author")], route=False,
    )  # fmt: skip


def _enable(corpus, **automation):
    f.write_config(CONFIG, f.experiment_config([corpus], automation=automation or None))
    done = services.configure_goal(
        goal_id="demo", agent_id="author", config_path=CONFIG, execute=True
    )
    assert done.status == "configured"


def _event(event_id="hook-1"):
    event = f.scoped_event(event_id, scope={"surface": BOUNDARY})
    event.pop("corpus_id")  # the configured ingest corpus is used
    return event


def _hook(**kw):
    kw.setdefault("execute", True)
    run = services.run_boundary_hook(goal_id="demo", agent_id="author", boundary=BOUNDARY, **kw)
    return hook_documents.boundary_hook(run)


def test_ingest_then_recall_at_the_boundary_when_both_flags_are_on(db, review_corpus, double):
    _enable(review_corpus)
    double.reset_calls()
    ingested = _hook(event=_event())
    assert ingested["status"] == "ingested"
    assert ingested["ingest"]["status"] == "activated"
    assert ingested["provider_call_count"] == double.call_count > 0
    assert MemoryRecord.objects.get().corpus.corpus_id == "review"

    double.reset_calls()
    recalled = _hook(queries=[QUERY])
    assert recalled["status"] == "recalled"
    [item] = recalled["context"]["guidance"]
    assert item["summary"] == "Lead PR descriptions with the user-visible effect."
    receipt = recalled["application_receipt"]
    assert receipt["schema_version"] == "reward_memory_hook_application_receipt_v0"
    assert receipt["memory_refs"] == [item["memory_ref_digest"]]
    assert receipt["receipt_id"].startswith("rmhr_")
    assert "Lead PR" not in json.dumps(receipt)  # the receipt keeps digests, not content
    assert recalled["provider_call_count"] == double.call_count > 0
    assert recalled["user_gate"] is False


@pytest.mark.parametrize(
    ("automation", "kwargs"),
    [
        ({"automatic_recall": False}, {"queries": [QUERY]}),
        ({"automatic_ingest": False}, {"event": "event"}),
        ({"automatic_recall": False, "automatic_ingest": False},
         {"queries": [QUERY], "event": "event"}),
    ],
)  # fmt: skip
def test_an_explicit_false_flag_makes_zero_provider_calls(
    db, review_corpus, double, automation, kwargs
):
    _enable(review_corpus, **automation)
    double.reset_calls()
    if kwargs.get("event") == "event":
        kwargs["event"] = _event()
    result = _hook(**kwargs)
    assert result["status"] == "skipped"
    assert result["skip_reason"] == "automation_off"
    assert (result["provider_call_count"], double.call_count) == (0, 0)
    assert not MemoryRecord.objects.exists()


def test_without_an_experiment_the_hook_is_skipped_with_zero_calls(db, review_corpus, double):
    result = _hook(queries=[QUERY], event=_event())
    assert (result["status"], result["skip_reason"]) == ("skipped", "experiment_disabled")
    assert double.call_count == 0
    assert result["original_output_kept"] is True


def test_a_boundary_missing_from_the_config_is_skipped(db, agents, double):
    other = f.register("prefs", provider_id="double", agents=[("demo", "author")], route=False)
    _enable(other)
    double.reset_calls()
    result = _hook(queries=[QUERY])
    assert result["skip_reason"] == "boundary_not_configured"
    assert double.call_count == 0


def test_preview_plans_without_provider_calls(db, review_corpus, double):
    _enable(review_corpus)
    double.reset_calls()
    planned = _hook(queries=[QUERY], event=_event(), execute=False)
    assert planned["status"] == "planned"
    assert planned["recall_planned"] is planned["ingest_planned"] is True
    assert double.call_count == 0


def test_the_recall_profile_bounds_the_queries_and_undeclared_boundaries_are_refused(
    db, review_corpus, double
):
    _enable(review_corpus)
    with pytest.raises(RewardMemoryError) as exc:
        _hook(queries=["one", "two"])
    assert exc.value.field == "queries"
    with pytest.raises(RewardMemoryError) as exc:
        services.run_boundary_hook(
            goal_id="demo", agent_id="author", boundary="anything.else", queries=["x"]
        )
    assert exc.value.field == "boundary"


def test_provider_unavailable_fails_open(db, review_corpus, double):
    _enable(review_corpus)
    double.available = False
    result = _hook(queries=[QUERY])
    assert result["ok"] is True
    assert result["status"] == "no_effect"
    assert result["user_gate"] is False


def test_cli_and_api_run_the_same_hook(db, review_corpus, double, host_client, tmp_path):
    _enable(review_corpus)
    path = tmp_path / "event.json"
    path.write_text(json.dumps(_event()))
    cli = run_cli(
        "reward_memory", "hook", "--boundary", BOUNDARY, "--goal-id", "demo",
        "--agent-id", "author", "--event", str(path), "--execute",
    )  # fmt: skip
    assert (cli.code, cli.json["status"]) == (0, "ingested")
    text = run_cli(
        "reward_memory", "hook", "--boundary", BOUNDARY, "--goal-id", "demo",
        "--agent-id", "author", "--query", QUERY, "--execute", "--format", "text",
    )  # fmt: skip
    assert "status: recalled" in text.stdout
    api = host_client("demo", "author").post(
        f"/api/v1/reward-memory/hooks/{BOUNDARY}/",
        {"goal_id": "demo", "agent_id": "author", "queries": [QUERY], "execute": True},
        format="json",
    )
    assert api.status_code == 200
    assert api.json()["status"] == "recalled"
    forbidden = host_client("demo", "reviewer").post(
        f"/api/v1/reward-memory/hooks/{BOUNDARY}/",
        {"goal_id": "demo", "agent_id": "author", "queries": [QUERY]},
        format="json",
    )
    assert forbidden.status_code == 403
