"""Reward Memory's retention pruner (``contributions.RETENTION``; see
``loopx_site.core.retention``).

``receipts``: application receipts older than the cutoff (nothing points at one: a
dogfood batch names it by id, so a batch must cite receipts recorded within the window —
an older one answers ``application_receipt_not_found``). What stays: every
recall receipt (a recall id replays from it without calling the provider, and
application receipts point at it), every record, transition and provider-deletion row
(the audit that a close — and its provider delete — happened), ingest events (an event
id replays from them), and the preference journal (never pruned: it is the history).
"""

import datetime as dt

from reward_memory.models import ApplicationReceipt


def prune_receipts(*, policy: str, older_than: dt.datetime, execute: bool) -> dict[str, int]:
    due = ApplicationReceipt.objects.filter(created_at__lt=older_than)
    count = due.count()
    if execute and count:
        due.delete()
    return {"reward_memory.ApplicationReceipt": count}
