"""Models of the semantic preference recall hook (Part B).

* ``ProviderExtension`` — runtime state of an installed provider extension (its
  manifest-owned entrypoint, doctor, permission and timeout, and whether an operator
  activated it).
* ``SemanticPreferenceConfig`` — a ``semantic_preference_hook_config_v0`` an operator
  registered by name; the API takes configs only this way (never a client path). A
  registered config only binds an installed extension by id (no command), belongs to one
  Goal (``goal``; ``NULL`` = operators only) and may be shared with other Goals.
* ``ProviderNote`` — an operator-added note in the corpus of the built-in ``loopx-local``
  provider, indexed into the shared full-text index.

Rows are written only through ``preferences.services``.
"""

from django.db import models
from django.db.models import Q

from loopx_site.core.model_bases import check, unique

__all__ = ["ProviderExtension", "ProviderNote", "SemanticPreferenceConfig"]


class ProviderExtension(models.Model):
    extension_id = models.CharField(max_length=128)
    capability = models.CharField(max_length=64)
    protocol = models.CharField(max_length=64)
    version = models.CharField(max_length=64, blank=True, default="")
    description = models.CharField(max_length=500, blank=True, default="")
    entrypoint_argv = models.JSONField(help_text="Manifest-owned entrypoint (program + args).")
    doctor_argv = models.JSONField(null=True, blank=True, help_text="Read-only health check.")
    permission = models.CharField(max_length=64)
    timeout_seconds = models.PositiveSmallIntegerField()
    setup_hints = models.JSONField(default=dict, blank=True)
    manifest_digest = models.CharField(max_length=71, help_text="sha256 of the manifest.")
    revision = models.CharField(
        max_length=16, blank=True, default="", help_text="Revision id of the active manifest."
    )
    rollback_revision = models.CharField(max_length=16, blank=True, default="")
    revisions = models.JSONField(
        default=list, blank=True, help_text="Retained manifest revisions (newest last)."
    )
    active = models.BooleanField(default=False)
    installed_at = models.DateTimeField()
    updated_at = models.DateTimeField()
    activated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["extension_id"]
        constraints = [
            unique("extension_id", "extension_id"),
            check("timeout_range", Q(timeout_seconds__gte=1) & Q(timeout_seconds__lte=120)),
            check("identity_present", ~Q(extension_id="") & ~Q(capability="") & ~Q(protocol="")),
        ]

    def __str__(self) -> str:
        return f"{self.extension_id} ({'active' if self.active else 'inactive'})"


class SemanticPreferenceConfig(models.Model):
    name = models.CharField(max_length=128)
    goal = models.ForeignKey(
        "core.Goal",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="semantic_preference_configs",
        help_text="Owner Goal: its host tokens may run this config. Empty = operators only.",
    )
    shared_with = models.ManyToManyField(
        "core.Goal",
        blank=True,
        related_name="shared_semantic_preference_configs",
        help_text="Other Goals an operator explicitly shared this config with.",
    )
    project = models.CharField(
        max_length=1024, help_text="Project reference sent to the provider with every request."
    )
    description = models.CharField(max_length=500, blank=True, default="")
    config = models.JSONField(help_text="A semantic_preference_hook_config_v0 object.")
    config_digest = models.CharField(max_length=71)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()

    class Meta:
        ordering = ["name"]
        verbose_name = "semantic preference config"
        constraints = [
            unique("name", "name"),
            check("present", ~Q(name="") & ~Q(project="")),
        ]

    def __str__(self) -> str:
        return self.name


class ProviderNote(models.Model):
    project = models.CharField(max_length=1024)
    note_id = models.CharField(max_length=128)
    summary = models.TextField(help_text="What the provider returns as the item summary.")
    body = models.TextField(blank=True, default="", help_text="Extra searchable text.")
    surfaces = models.JSONField(
        default=list, blank=True, help_text="Surface ids it applies to; empty = every surface."
    )
    context = models.JSONField(
        default=dict,
        blank=True,
        help_text="Context it requires ({key: value}); empty = any context.",
    )
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()

    class Meta:
        ordering = ["project", "note_id"]
        constraints = [
            unique("project_note", "project", "note_id"),
            check("present", ~Q(project="") & ~Q(note_id="") & ~Q(summary="")),
        ]

    def __str__(self) -> str:
        return f"{self.project}:{self.note_id}"
