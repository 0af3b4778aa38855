"""The turn-start hook dispatch carried by the quota packet.

Turn-start hooks are capability-owned: each producer looks at one exact (Goal, Agent)
and either does not participate (``None``: the packet gains nothing) or contributes a
result (``loopx_turn_start_capability_hook_result_v0``), optionally a private context
body and a required read naming the command the host runs, in the project's relative
form (``python manage.py semantic_preference agent read --goal-id G --agent-id A``) —
never this server's interpreter or file paths, which a host document must not carry.

The built-in hook is ``semantic_preference.agent_context``: a scope that never
committed a preference adds nothing; a committed scope is ``observed`` (or ``empty``)
with its current view as context; an unreadable store is ``unavailable`` with
``agent_preferences_unreadable`` — or ``agent_preferences_permission_denied`` when the
store refused access — never an empty view.

Size: context bodies may be dropped to fit ``MAX_DISPATCH_BYTES``; required reads and
failures never are (size excess does not authorize dropping obligations).
"""

import logging
import shlex
from dataclasses import dataclass
from typing import Any

from loopx_site.core.canonical import canonical_size
from loopx_site.core.models import Agent, Goal
from turn_recall import adapters, capsule, documents
from turn_recall import contracts as c

logger = logging.getLogger("loopx.turn_recall")


@dataclass(frozen=True)
class Contribution:
    result: dict[str, Any]
    context: dict[str, Any] | None = None
    required_read: dict[str, Any] | None = None


#: How a host names this project's CLI in a required read: run from the project
#: directory (the same words LoopX's own CLI takes, with ``_`` for ``-``).
HOST_COMMAND = ("python", "manage.py")


def command_argv(*words: str) -> list[str]:
    """``["python", "manage.py", *words]``: the command a host runs, relative to the
    project — no absolute path of this server (interpreter, checkout) leaves it."""
    return [*HOST_COMMAND, *words]


def shell_command(argv: list[str]) -> str:
    return " ".join(shlex.quote(a) for a in argv)


_result = documents.hook_result


def preference_hook(goal: Goal, agent: Agent) -> Contribution | None:
    seen = adapters.observe_preferences(goal, agent)
    if not seen.participating:
        return None
    hook, capability = c.PREFERENCE_HOOK_ID, c.PREFERENCE_CAPABILITY_ID
    argv = command_argv(
        "semantic_preference", "agent", "read", "--goal-id", goal.goal_id,
        "--agent-id", agent.agent_id, "--format", "json",
    )  # fmt: skip
    read = {
        "hook_id": hook,
        "kind": "agent_preferences",
        "argv": argv,
        "command": shell_command(argv),
        "reason": "Read the current explicit preferences and retirements before "
        "preference-dependent work; memory is not permission.",
        "ordering": "before_work",
    }
    if seen.error_code:
        result = _result(hook, capability, c.UNAVAILABLE, 0, seen.error_code)
        return Contribution(result, None, read)
    status = c.OBSERVED if seen.observation_count else c.HOOK_EMPTY
    result = _result(hook, capability, status, seen.observation_count, None)
    context = {"hook_id": hook, "kind": "agent_preferences", "current": seen.view}
    return Contribution(result, context, read if status == c.OBSERVED else None)


#: What a host holds while a hook's context is missing (independent work continues).
HELD_ACTIONS = {c.PREFERENCE_HOOK_ID: "preference_dependent_actions"}

#: Installed turn-start hooks, in order (tests may add producers).
TURN_START_HOOKS = [preference_hook]


def _run(producer, goal: Goal, agent: Agent) -> Contribution | None:
    try:
        return producer(goal, agent)
    except Exception as exc:  # a producer failure is an observation, never the turn's
        name = getattr(producer, "hook_id", getattr(producer, "__name__", "hook"))
        logger.info("turn-start hook %s failed: %s", name, type(exc).__name__)
        return Contribution(
            _result(str(name), str(getattr(producer, "capability_id", "")), "failed", 0,
                    "producer_failed"),
        )  # fmt: skip


def dispatch(goal: Goal, agent: Agent, *, max_bytes: int = c.MAX_DISPATCH_BYTES) -> dict | None:
    """The dispatch of every participating hook, or ``None`` when none participates."""
    contributions = [x for x in (_run(p, goal, agent) for p in TURN_START_HOOKS) if x]
    if not contributions:
        return None
    results = [x.result for x in contributions]
    contexts = [x.context for x in contributions if x.context is not None]
    reads = [dict(x.required_read) for x in contributions if x.required_read]
    failures = []
    for x in contributions:
        if x.result["status"] in ("unavailable", "failed", "partial"):
            failures.append(
                {
                    "hook_id": x.result["hook_id"],
                    "capability_id": x.result["capability_id"],
                    "status": x.result["status"],
                    "error_code": x.result["error_code"],
                    "read_command": x.required_read["command"] if x.required_read else None,
                    "held_actions": HELD_ACTIONS.get(
                        x.result["hook_id"], f"actions_dependent_on:{x.result['hook_id']}"
                    ),
                }
            )
    out = documents.dispatch(
        registered_count=len(TURN_START_HOOKS),
        results=results,
        required_reads=reads,
        failures=failures,
        contexts=contexts,
    )
    return trim(out, max_bytes=max_bytes)


def trim(out: dict, *, max_bytes: int) -> dict:
    """Drop context bodies (last first) until the dispatch fits; never an obligation."""
    while out["contexts"] and canonical_size(out) > max_bytes:
        dropped = out["contexts"].pop()
        out["trimmed_hook_ids"].append(dropped["hook_id"])
    delivered = {ctx["hook_id"] for ctx in out["contexts"]}
    for read in out["required_reads"]:
        read["satisfied_by_delivered_context"] = read["hook_id"] in delivered
    return out


def signed_capsule(goal_id: str, agent_id: str, hooks: dict | None, issued_at: str):
    if not hooks:
        return None
    return capsule.build(
        goal_id=goal_id, agent_id=agent_id, issued_at=issued_at, failures=hooks["failures"]
    )
