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


def log_admin_action(request, obj, message: str = "") -> None:
    """One "Recent actions" entry (``LogEntry``, a change) for an admin action performed
    on ``obj``: the action's name and, when given, what it did. Rows whose model is not
    registered in the admin still log (the entry simply has no link)."""
    from django.contrib.admin.models import CHANGE, LogEntry

    if getattr(obj, "_meta", None) is None or getattr(obj, "pk", None) is None:
        return  # not a stored row (e.g. a grouped selection): nothing to point at
    action = request.POST.get("action", "") if request.method == "POST" else ""
    text = " — ".join(
        part for part in (f"Admin action: {action}" if action else "", message) if part
    )
    LogEntry.objects.log_actions(
        user_id=request.user.pk,
        queryset=[obj],
        action_flag=CHANGE,
        change_message=text[:2000] or "Admin action",
        single_object=True,
    )


def admin_link(obj, text: str | None = None) -> str:
    """An HTML link to ``obj``'s admin page showing ``text`` (default: its ``str``);
    the plain escaped text when the model has no admin page."""
    from django.urls import NoReverseMatch, reverse

    label = text if text is not None else str(obj)
    meta = obj._meta
    try:
        url = reverse(f"admin:{meta.app_label}_{meta.model_name}_change", args=[obj.pk])
    except NoReverseMatch:
        return format_html("{}", label)
    return format_html('<a href="{}">{}</a>', url, label)
