"""Race-safe single-row writes guarded by a unique constraint (every app uses them).

A conditional write is enforced by the database: two transactions that insert the same
row race, one wins, and the loser either re-reads the winner's row or lets it stand.
"""

from typing import Any

from django.db import IntegrityError, models, transaction


def get_or_create_once(
    queryset: models.QuerySet | models.Manager, *, defaults: dict[str, Any], **lookup: Any
) -> tuple[Any, bool]:
    """``get_or_create`` of a row a unique constraint guards: a lost creation race
    re-reads the winner's row (``created`` is then ``False``). ``queryset`` may lock
    (``select_for_update()``); the re-read goes through it too."""
    try:
        with transaction.atomic():
            return queryset.get_or_create(**lookup, defaults=defaults)
    except IntegrityError:
        return queryset.get(**lookup), False


def insert_once(model: type[models.Model], **fields: Any) -> bool:
    """Insert one row a unique constraint guards; ``False`` when a concurrent insert of
    the same row won (it stands; nothing is raised)."""
    try:
        with transaction.atomic():
            model.objects.create(**fields)
    except IntegrityError:
        return False
    return True
