"""The CLI, the API and the admin are thin adapters over the same services."""

import pytest

from preferences.models import PreferenceOperation, PreferenceSubject
from tests.helpers import run_cli

BASE = "/api/v1/goals/demo/agents/author/preferences/"
REMEMBER = {
    "key": "review.collaboration",
    "statement": "Ask the designated reviewer before merging.",
    "source_ref": "owner-message-1",
    "source_quote": "Use the designated reviewer.",
    "expected_revision": None,
    "operation_id": "preference-1",
}
CLI_REMEMBER = [
    "--goal-id",
    "demo",
    "--agent-id",
    "author",
    "--key",
    "review.collaboration",
    "--statement",
    "Ask the designated reviewer before merging.",
    "--source-ref",
    "owner-message-1",
    "--source-quote",
    "Use the designated reviewer.",
    "--expected-revision",
    "none",
    "--operation-id",
    "preference-1",
]


def strip_times(payload):
    if isinstance(payload, dict):
        return {k: strip_times(v) for k, v in payload.items() if k != "recorded_at"}
    if isinstance(payload, list):
        return [strip_times(v) for v in payload]
    return payload


def test_cli_and_api_give_the_same_receipt_for_the_same_operation(scope, host_client):
    cli = run_cli(
        "semantic_preference", "agent", "remember", *CLI_REMEMBER, "--execute", "--format", "json"
    )
    assert cli.code == 0, cli.stdout
    assert cli.json["status"] == "applied"
    cli_again = run_cli("semantic_preference", "agent", "remember", *CLI_REMEMBER, "--execute")
    api = host_client("demo", "author").post(
        f"{BASE}remember/", {**REMEMBER, "execute": True}, format="json"
    )
    assert api.status_code == 200  # a replay of the CLI's commit
    assert api.json() == cli_again.json
    assert api.json()["status"] == "replayed"
    assert api.json()["receipt"] == cli.json["receipt"]  # the original receipt
    assert api.json()["current"] == cli.json["current"]


def test_remember_shortcut_takes_the_same_arguments(scope):
    preview = run_cli("remember", *CLI_REMEMBER)
    assert preview.code == 0
    assert preview.json["status"] == "preview"
    assert PreferenceOperation.objects.count() == 0


def test_api_read_remember_retire_history_round_trip(scope, host_client):
    client = host_client("demo", "author")
    assert client.get(BASE).json()["current"]["revision"] is None
    preview = client.post(f"{BASE}remember/", REMEMBER, format="json")
    assert preview.json()["status"] == "preview"
    assert PreferenceSubject.objects.count() == 0
    committed = client.post(f"{BASE}remember/", {**REMEMBER, "execute": True}, format="json")
    assert committed.status_code == 201
    assert committed.json()["status"] == "applied"
    revision = client.get(BASE).json()["current"]["revision"]
    retired = client.post(
        f"{BASE}retire/",
        {
            "key": "review.collaboration",
            "source_ref": "owner-message-2",
            "source_quote": "Forget it.",
            "expected_revision": revision,
            "operation_id": "preference-2",
            "execute": True,
        },
        format="json",
    )
    assert retired.json()["current"]["items"][0]["state"] == "retired"
    page = client.get(f"{BASE}history/?limit=1").json()
    assert len(page["events"]) == 1
    assert page["has_more"] is True
    rest = client.get(f"{BASE}history/", {"after_cursor": page["next_cursor"]}).json()
    assert [e["sequence"] for e in rest["events"]] == [2]
    assert rest["next_cursor"] is not None  # kept at the end, as LoopX does
    assert rest["has_more"] is False


def test_api_stale_write_is_409_envelope(scope, host_client):
    client = host_client("demo", "author")
    client.post(f"{BASE}remember/", {**REMEMBER, "execute": True}, format="json")
    response = client.post(
        f"{BASE}remember/", {**REMEMBER, "operation_id": "p2", "execute": True}, format="json"
    )
    assert response.status_code == 409
    body = response.json()
    assert body["schema_version"] == "semantic_preference_error_v0"
    assert body["code"] == "revision_conflict"
    assert body["status"] == "revision_conflict"
    assert body["ok"] is False
    assert body["details"]["current_revision"] == "1"
    assert body["current"]["revision"] == "1"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"key": "Bad Key"}, "key"),
        ({"expires_at": "tomorrow"}, "expires_at"),
        ({"expected_revision": ""}, "expected_revision"),
        ({"statement": ""}, "statement"),
    ],
)
def test_api_bad_input_is_400_with_field(scope, host_client, body, field):
    response = host_client("demo", "author").post(
        f"{BASE}remember/", {**REMEMBER, **body}, format="json"
    )
    assert response.status_code == 400
    assert response.json()["field"] == field


def test_api_scope_is_the_tokens(scope, host_client):
    assert host_client("demo", "reviewer").get(BASE).status_code == 403
    assert host_client("demo").get(BASE).status_code == 200
    assert (
        host_client("demo", "author")
        .get("/api/v1/goals/demo/agents/ghost/preferences/")
        .status_code
        == 403
    )


def test_api_unknown_agent_is_404(scope, host_client):
    response = host_client("demo").get("/api/v1/goals/demo/agents/ghost/preferences/")
    assert response.status_code == 404
    assert response.json()["code"] == "agent_not_registered"


@pytest.mark.parametrize(
    "argv",
    [
        ["semantic_preference", "agent", "remember", "--goal-id", "demo"],
        ["semantic_preference", "agent", "remember", *CLI_REMEMBER[:-2], "--operation-id", "-x"],
        [
            "semantic_preference",
            "agent",
            "history",
            "--goal-id",
            "demo",
            "--agent-id",
            "author",
            "--limit",
            "0",
        ],
        ["semantic_preference", "agent", "read", "--goal-id", "demo", "--agent-id", "nobody"],
        ["remember", *CLI_REMEMBER[:-4], "--expected-revision", "-1", "--operation-id", "o"],
        ["semantic_preference", "agent", "remember", *CLI_REMEMBER, "--expires-at", "2020"],
    ],
)
def test_cli_bad_input_is_one_structured_error_with_exit_2(scope, argv):
    result = run_cli(*argv)
    assert result.code == 2
    assert result.json["schema_version"] == "semantic_preference_error_v0"
    assert result.json["ok"] is False
    assert "Traceback" not in result.stdout + result.stderr
    assert PreferenceOperation.objects.count() == 0


def test_cli_text_format_prints_a_table_of_current_subjects(scope):
    run_cli("semantic_preference", "agent", "remember", *CLI_REMEMBER, "--execute")
    text = run_cli(
        "semantic_preference",
        "agent",
        "read",
        "--goal-id",
        "demo",
        "--agent-id",
        "author",
        "--format",
        "text",
    ).stdout
    assert "revision=1" in text
    assert "status=read" in text
    assert "KEY" in text
    assert "review.collaboration" in text
    history = run_cli(
        "semantic_preference",
        "agent",
        "history",
        "--goal-id",
        "demo",
        "--agent-id",
        "author",
        "--format",
        "text",
    ).stdout
    assert history.startswith("#1 ")


def test_admin_retire_action_goes_through_the_service(scope, admin_client):
    run_cli("semantic_preference", "agent", "remember", *CLI_REMEMBER, "--execute")
    subject = PreferenceSubject.objects.get()
    form = admin_client.post(
        "/admin/preferences/preferencesubject/",
        {"action": "retire_selected", "_selected_action": [subject.pk]},
    )
    assert form.status_code == 200
    assert b"source_quote" in form.content
    assert f'name="seen_revision_{subject.pk}" value="1"'.encode() in form.content
    done = admin_client.post(
        "/admin/preferences/preferencesubject/",
        {
            "action": "retire_selected",
            "_selected_action": [subject.pk],
            "apply": "1",
            f"seen_revision_{subject.pk}": "1",
            "source_ref": "operator-ticket-7",
            "source_quote": "Owner asked to forget it.",
        },
        follow=True,
    )
    assert done.status_code == 200
    subject.refresh_from_db()
    assert subject.state == "retired"
    assert (
        PreferenceOperation.objects.filter(kind="retire", source_ref="operator-ticket-7").count()
        == 1
    )


def test_admin_correct_action_records_a_new_revision(scope, admin_client):
    run_cli("semantic_preference", "agent", "remember", *CLI_REMEMBER, "--execute")
    subject = PreferenceSubject.objects.get()
    admin_client.post(
        "/admin/preferences/preferencesubject/",
        {
            "action": "correct_selected",
            "_selected_action": [subject.pk],
            "apply": "1",
            f"seen_revision_{subject.pk}": "1",
            "statement": "Ask the release reviewer.",
            "source_ref": "operator-ticket-8",
            "source_quote": "Use the release reviewer.",
        },
    )
    subject.refresh_from_db()
    assert subject.statement == "Ask the release reviewer."
    assert subject.revision == 2


def test_admin_pages_render_and_the_subject_list_shows_each_statement(scope, admin_client):
    run_cli("semantic_preference", "agent", "remember", *CLI_REMEMBER, "--execute")
    listing = admin_client.get("/admin/preferences/preferencesubject/").content.decode()
    assert "review.collaboration" in listing
    # issue 34: an operator correcting a preference sees what it says (an excerpt)
    assert "Ask the designated reviewer" in listing
    scope_page = admin_client.get("/admin/preferences/preferencescope/")
    assert scope_page.status_code == 200
    from preferences.models import PreferenceScope

    detail = admin_client.get(
        f"/admin/preferences/preferencescope/{PreferenceScope.objects.get().pk}/change/"
    )
    assert "Ask the designated reviewer" in detail.content.decode()
