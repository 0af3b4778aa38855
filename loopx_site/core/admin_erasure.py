"""The Goal admin's "Erase this Goal's memory" action (permission ``core.erase_goal``):
the first submit shows the preview receipt of each selected Goal and asks to confirm; the
confirmation runs the same service as ``goal erase --execute`` and shows the receipts."""

from django.contrib import messages
from django.contrib.admin import helpers
from django.template.response import TemplateResponse

from loopx_site.core import access, documents, erasure
from loopx_site.core.errors import DomainError

CONFIRM_FIELD = "erase_confirmed"


def erase_action(model_admin, request, queryset):
    execute = request.POST.get(CONFIRM_FIELD) == "yes"
    receipts = []
    for goal in queryset.order_by("goal_id"):
        try:
            result = erasure.erase(
                goal_id=goal.goal_id, execute=execute, operator=access.signed_in(request)
            )
        except DomainError as err:
            model_admin.message_user(request, f"{goal.goal_id}: {err.code}", messages.ERROR)
            continue
        receipts.append(documents.goal_erasure(result))
    if execute:
        total = sum(r["total_rows"] for r in receipts)
        model_admin.message_user(
            request, f"Erased {len(receipts)} Goal(s): {total} rows.", messages.SUCCESS
        )
    context = {
        **model_admin.admin_site.each_context(request),
        "title": "Erasure receipt" if execute else "Erase this Goal's memory?",
        "opts": model_admin.model._meta,
        "receipts": receipts,
        "executed": execute,
        "selected": [str(pk) for pk in queryset.values_list("pk", flat=True)],
        "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
        "confirm_field": CONFIRM_FIELD,
    }
    return TemplateResponse(request, "admin/core/goal/erase_memory.html", context)
