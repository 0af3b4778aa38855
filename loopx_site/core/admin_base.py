"""Admin building blocks shared by every app.

Journal, receipt and outbox rows are immutable: operators view them, and any operator
operation is an admin action that calls a service.
"""

from django.contrib import admin
from django.utils.html import format_html


class ReadOnlyPermissions:
    """Viewable; never added, changed or deleted through the admin."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class ReadOnlyAdmin(ReadOnlyPermissions, admin.ModelAdmin):
    pass


class ReadOnlyTabularInline(ReadOnlyPermissions, admin.TabularInline):
    extra = 0
    can_delete = False


def fields_then(model, *shown: str, without: str) -> list[str]:
    """Every field of ``model`` but ``without`` (a raw JSON field), then the ``shown``
    admin methods that display it readably: a read-only admin's ``readonly_fields``."""
    return [f.name for f in model._meta.fields if f.name != without] + list(shown)


# -- list columns an operator can read at 1280 px ---------------------------------------
#: Characters of an opaque ref shown in a list: its prefix and the first hex digits,
#: enough to tell rows apart; the whole ref is on hover (and on the detail page).
SHORT_REF = 16


def short_ref(value: str | None, keep: int = SHORT_REF) -> str:
    """``pwi_43fb4a012bb2d1…`` with the full ref in ``title`` (hover, select to copy)."""
    if not value:
        return "—"
    if len(value) <= keep + 1:
        return value
    return format_html('<span class="lx-ref" title="{}">{}…</span>', value, value[:keep])


def ref_column(field: str, *, description: str | None = None):
    """A list column showing ``field`` as a ``short_ref`` (sortable by the field);
    ``field`` may follow relations (``record__record_ref``)."""

    @admin.display(
        description=description or field.split("__")[-1].replace("_", " "), ordering=field
    )
    def column(obj):
        value = obj
        for part in field.split("__"):
            value = getattr(value, part, None) if value is not None else None
        return short_ref(value)

    column.__name__ = f"{field}_short"
    return column


def excerpt_column(field: str, *, description: str | None = None, length: int = 60):
    """A list column with the first ``length`` characters of a text field (the list is
    visible only to operators with view permission on the model)."""

    @admin.display(description=description or field.replace("_", " "))
    def column(obj):
        text = getattr(obj, field) or ""
        return text if len(text) <= length else text[: length - 1].rstrip() + "…"

    column.__name__ = f"{field}_excerpt"
    return column
