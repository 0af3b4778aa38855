"""The review to-do (issue 34): what waits for a human is counted on the admin index and
the dashboard, each count linking its filtered list; the review queue filters by state
and by "awaiting me", and shows the replaced text beside the proposed one."""

import pytest
from django.contrib.auth import get_user_model

from reward_memory import services
from reward_memory.models import MemoryRecord
from tests.reward_memory import factories as f

QUEUE = "/admin/reward_memory/reviewqueueitem/"
EDITED = "Lead PR descriptions with the effect, then the validation."


@pytest.fixture
def edit(db, double_corpus, double):
    services.grant_checkpoint(
        checkpoint_id="ckpt-edit",
        project=f.PROJECT,
        actor=f.OWNER,
        role="corpus_owner",
        action_scopes=["reward_memory.edit.prefs"],
        operator=f.op(f.OWNER),
        execute=True,
    )
    receipt = f.ingested(event=f.scoped_event(), goal_id="demo", agent_id="author", execute=True)
    record = MemoryRecord.objects.get(record_ref=receipt["record_ref"])
    services.operator_control(
        record_ref=record.record_ref,
        action="edit",
        control_ref="ckpt-edit",
        reasoning_summary="Tighter wording.",
        edited_content_summary=EDITED,
        principal=f.op(f.OWNER),
        execute=True,
    )
    return record


def _todo_count(html: str, label: str) -> str:
    row = html.split(label, 1)[1]
    return row.split('class="lx-todo-count">', 1)[1].split("<", 1)[0]


def test_index_and_dashboard_count_what_waits_for_a_human(admin_client, edit):
    index = admin_client.get("/admin/").content.decode()
    assert "Waits for a human" in index
    assert _todo_count(index, "Replacements awaiting the reviewer") == "1"
    assert f"{QUEUE}?state=awaiting_review" in index
    dashboard = admin_client.get("/admin/dashboard/").content.decode()
    assert _todo_count(dashboard, "Replacements awaiting the reviewer") == "1"
    # Reward Memory comes first on the index, Django's own apps last
    assert index.index("Reward Memory") < index.index("Authentication and Authorization")


def test_the_queue_filters_by_state_and_shows_old_beside_new(client, edit):
    client.force_login(get_user_model().objects.get(username="reviewer"))
    awaiting = client.get(f"{QUEUE}?state=awaiting_review").content.decode()
    assert EDITED in awaiting
    assert edit.summary in awaiting  # the replaced record's text, not only its id
    assert EDITED not in client.get(f"{QUEUE}?state=applied").content.decode()
    assert EDITED in client.get(f"{QUEUE}?state=mine").content.decode()  # the reviewer's turn
    client.force_login(get_user_model().objects.get(username="retirer"))
    theirs = client.get(f"{QUEUE}?state=mine")
    assert theirs.status_code == 200
    assert "0 review queue" in theirs.content.decode() or EDITED not in theirs.content.decode()
