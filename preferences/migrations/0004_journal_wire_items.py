"""LoopX wire items and journal speed (issues 11 and 16).

* ``PreferenceSubject.item`` / ``size``: each current subject stores its
  ``agent_preferences_v1`` item (canonical JSON) and that item's byte length;
* ``PreferenceScope.subject_count`` / ``used_bytes``: capacity bookkeeping advanced with
  the revision, so usage is never recomputed from JSON;
* ``PreferenceOperation.request_digest`` → ``intent_hash`` (LoopX's intent digest),
  recomputed for existing entries, whose stored receipts become LoopX's receipt.

The data step re-derives everything from the rows (frozen copy of the rules of
``preferences.selectors.stored_item`` and ``_Plan.intent_hash`` as of this migration).
"""

import hashlib
import json

from django.db import migrations, models


def _canonical(value) -> bytes:
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def _iso(value):
    if value is None:
        return None
    import datetime as dt

    value = value.astimezone(dt.UTC)
    spec = "milliseconds" if value.microsecond else "seconds"
    return value.replace(tzinfo=None).isoformat(timespec=spec) + "Z"


def forwards(apps, schema_editor):
    Scope = apps.get_model("preferences", "PreferenceScope")
    Operation = apps.get_model("preferences", "PreferenceOperation")
    Subject = apps.get_model("preferences", "PreferenceSubject")
    for scope in Scope.objects.all():
        identity = {
            "runtime_id": scope.runtime_id,
            "state_ref": scope.state_ref,
            "instance_id": scope.instance_id,
            "goal_id": scope.goal_ref,
            "agent_id": scope.agent_ref,
        }
        for op in Operation.objects.filter(scope=scope).exclude(kind="migrate"):
            intent = {
                "scope": identity,
                "action": op.kind,
                "operation_id": op.operation_id,
                "key": op.key,
                "expected_revision": (
                    None if op.expected_revision is None else str(op.expected_revision)
                ),
                "source_ref": op.source_ref,
                "source_quote": op.source_quote,
                "statement": op.statement,
                "expires_at": _iso(op.expires_at),
            }
            op.intent_hash = hashlib.sha256(_canonical(intent)).hexdigest()
            op.receipt = {
                "operation_id": op.operation_id,
                "intent_hash": op.intent_hash,
                "key": op.key,
                "state": "retired" if op.statement is None else "active",
                "supersedes_operation_id": op.predecessor_operation_id,
            }
            op.save(update_fields=["intent_hash", "receipt"])
        count = used = 0
        for subject in Subject.objects.filter(scope=scope).select_related("operation"):
            op = subject.operation
            item = {
                "key": subject.key,
                "state": subject.state,
                "statement": subject.statement,
                "expires_at": _iso(subject.expires_at),
                "source_kind": "user_instruction",
                "source_ref": op.source_ref,
                "source_quote": op.source_quote,
                "recorded_at": _iso(op.created_at),
                "operation_id": op.operation_id,
                "supersedes_operation_id": op.predecessor_operation_id,
            }
            raw = _canonical(item)
            subject.item = raw.decode("utf-8")
            subject.size = len(raw)
            subject.save(update_fields=["item", "size"])
            count += 1
            used += len(raw)
        scope.subject_count = count
        scope.used_bytes = used
        scope.save(update_fields=["subject_count", "used_bytes"])


class Migration(migrations.Migration):
    dependencies = [
        ("preferences", "0003_recall_config_owner_and_revisions"),
    ]

    operations = [
        migrations.RenameField(
            model_name="preferenceoperation", old_name="request_digest", new_name="intent_hash"
        ),
        migrations.AddField(
            model_name="preferencescope",
            name="subject_count",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="preferencescope",
            name="used_bytes",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="preferencesubject",
            name="item",
            field=models.TextField(default="{}"),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="preferencesubject",
            name="size",
            field=models.PositiveIntegerField(default=2),
            preserve_default=False,
        ),
        migrations.AddConstraint(
            model_name="preferencesubject",
            constraint=models.CheckConstraint(
                condition=models.Q(("size__gte", 2)),
                name="preferences_preferencesubject_item_size_check",
            ),
        ),
        migrations.RunPython(forwards, migrations.RunPython.noop),
    ]
