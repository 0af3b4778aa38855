"""Todo writes: ``add_todo`` (idempotent on ``(goal, todo_id)``; preview by default)."""

import re
from dataclasses import dataclass

from hooks.errors import AREA, error
from hooks.models import Todo
from hooks.services import validators
from loopx_site.core import clock
from loopx_site.core import selectors as core_selectors
from loopx_site.core.rows import get_or_create_once
from loopx_site.core.validation import require_identifier, require_text

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True)
class TodoResult:
    todo: Todo
    created: bool
    #: ``preview`` (nothing written), ``created`` or ``unchanged`` (already there)
    status: str = "created"


def add_todo(
    *,
    goal_id: str,
    todo_id: str,
    title: str,
    segment_ref: str | None = None,
    validator: str | None = None,
    execute: bool = False,
) -> TodoResult:
    """Add a Todo to a Goal; adding the same one again is a no-op.

    The same ``todo_id`` with a different title or segment is ``todo_conflict`` (409):
    Todos are not edited through ``add``. Without ``execute`` nothing is written: the
    preview runs every check the commit runs (the conflict check included) and returns
    the Todo that would be added.

    ``validator`` names the Todo's completion validator: an installed, enabled
    ``CompletionValidator`` (``validator_not_found`` otherwise) — never a command. The
    server runs it at settlement (``hooks.services.validators``).
    """
    require_identifier(todo_id, "todo_id", area=AREA)
    require_text(title, "title", max_length=500, area=AREA)
    if _CONTROL.search(title):
        raise error("invalid_argument", "title must not contain control characters", field="title")
    segment = segment_ref or ""
    if segment_ref is not None:
        require_text(segment_ref, "segment_ref", max_length=256, area=AREA)
        if _CONTROL.search(segment_ref):
            raise error(
                "invalid_argument",
                "segment_ref must not contain control characters",
                field="segment_ref",
            )
    goal = core_selectors.get_goal(goal_id, area=AREA)
    declared = validators.installed_validator(validator) if validator is not None else None
    now = clock.now()
    if not execute:
        existing = Todo.objects.filter(goal=goal, todo_id=todo_id).first()
        if existing is not None:
            _check_same(existing, title, segment, declared, todo_id)
            return TodoResult(todo=existing, created=False, status="preview")
        proposed = Todo(
            goal=goal, todo_id=todo_id, title=title, segment_ref=segment,
            validator=declared, created_at=now, updated_at=now,
        )  # fmt: skip
        return TodoResult(todo=proposed, created=False, status="preview")
    todo, created = get_or_create_once(
        Todo.objects,
        goal=goal,
        todo_id=todo_id,
        defaults={
            "title": title,
            "segment_ref": segment,
            "validator": declared,
            "created_at": now,
            "updated_at": now,
        },
    )
    if not created:
        _check_same(todo, title, segment, declared, todo_id)
    return TodoResult(todo=todo, created=created, status="created" if created else "unchanged")


def _check_same(todo: Todo, title: str, segment: str, declared, todo_id: str) -> None:
    if (
        todo.title != title
        or todo.segment_ref != segment
        or todo.validator_id != (declared.pk if declared is not None else None)
    ):
        raise error(
            "todo_conflict",
            f"Todo {todo_id!r} already exists with a different title, segment or validator",
            field="todo_id",
        )
