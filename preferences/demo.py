"""Demo data: the demo author's explicit preferences (idempotent by operation id)."""

from preferences import services


def load(*, log) -> dict:
    first = services.remember(
        goal_id="demo",
        agent_id="author",
        key="review.collaboration",
        statement="Ask the designated reviewer before merging.",
        source_ref="owner-message-1",
        source_quote="Use the designated reviewer for my changes.",
        expected_revision="none",
        operation_id="demo-preference-1",
        execute=True,
    )
    second = services.remember(
        goal_id="demo",
        agent_id="author",
        key="pr.description.language",
        statement="Write PR descriptions as short English sections.",
        source_ref="owner-message-2",
        source_quote="Keep PR descriptions short, in English.",
        expected_revision=first["state"]["revision"] if first["status"] == "applied" else "1",
        operation_id="demo-preference-2",
        execute=True,
    )
    view = services.read(goal_id="demo", agent_id="author")
    statuses = f"{first['status']}, {second['status']}"
    log(f"preferences: demo/author at revision {view['revision']} ({statuses})")
    return {"revision": view["revision"], "subjects": len(view["items"])}
