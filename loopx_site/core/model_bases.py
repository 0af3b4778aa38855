"""Model field factories and constraint helpers shared by several apps.

Migration-neutral by construction: a factory returns exactly the fields the models
declared by hand before (same targets, options and ``related_name``), and the constraint
helpers state the one naming rule of the project's constraints —
``<app_label>_<model>_<rule>_uniq`` / ``_check`` (Django fills in ``%(app_label)s`` and
``%(class)s``) — so adopting them changes no column, constraint or index name.
"""

from django.db import models
from django.db.models import Q


def goal_and_agent(related_name: str) -> tuple[models.ForeignKey, models.ForeignKey]:
    """The ``goal`` and ``agent`` foreign keys of a row that belongs to one Agent of one
    Goal: both cascade and share ``related_name`` (``"+"``: no reverse accessor).

    ``goal, agent = goal_and_agent("settlements")``
    """
    return (
        models.ForeignKey("core.Goal", on_delete=models.CASCADE, related_name=related_name),
        models.ForeignKey("core.Agent", on_delete=models.CASCADE, related_name=related_name),
    )


def unique(rule: str, *fields: str, condition: Q | None = None) -> models.UniqueConstraint:
    """``<app>_<model>_<rule>_uniq`` on ``fields`` (partial under ``condition``)."""
    return models.UniqueConstraint(
        fields=list(fields), condition=condition, name=f"%(app_label)s_%(class)s_{rule}_uniq"
    )


def check(rule: str, condition: Q) -> models.CheckConstraint:
    """``<app>_<model>_<rule>_check``."""
    return models.CheckConstraint(condition=condition, name=f"%(app_label)s_%(class)s_{rule}_check")
