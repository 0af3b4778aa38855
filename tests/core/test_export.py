"""``memory export`` / ``memory import`` (loopx_site.core.export, docs/export.md): a Goal's
memory out as a JSONL stream and back into an emptied instance, byte for byte, on
either database; conditional, idempotent, all or nothing."""

import json
from collections import Counter

import pytest
from django.core.management import call_command

from loopx_site.core.models import Goal
from reward_memory.models import Corpus, MemoryRecord
from tests.helpers import run_cli


def _export() -> str:
    out = run_cli("memory", "export", "--goal-id", "demo")
    assert out.code == 0, out.stdout
    return out.stdout


def _import(path, *extra):
    return run_cli("memory", "import", "--input", str(path), *extra)


def _close_two_records():
    """One record superseded by another and one retired, so lineage crosses the stream."""
    by_corpus: dict[str, list[MemoryRecord]] = {}
    for record in MemoryRecord.objects.filter(lifecycle_state="active").order_by("record_ref"):
        by_corpus.setdefault(record.corpus_id, []).append(record)
    old, new = next(rows for rows in by_corpus.values() if len(rows) >= 2)[:2]
    owner = old.corpus.owner
    done = run_cli("reward_memory", "supersede-record", "--record-ref", old.record_ref,
                   "--by-record-ref", new.record_ref, "--actor", owner, "--execute")  # fmt: skip
    assert done.code == 0, done.stdout
    other = MemoryRecord.objects.filter(lifecycle_state="active").exclude(pk=new.pk).first()
    done = run_cli("reward_memory", "retire-record", "--record-ref", other.record_ref,
                   "--actor", other.corpus.owner, "--execute")  # fmt: skip
    assert done.code == 0, done.stdout


def _flush():
    from django.db import connection

    connection.check_constraints()  # PostgreSQL: no deferred FK check left pending
    call_command("flush", interactive=False, verbosity=0, inhibit_post_migrate=True)
    assert not Goal.objects.exists()


@pytest.fixture
def exported(demo, tmp_path):
    _close_two_records()
    text = _export()
    path = tmp_path / "demo.jsonl"
    path.write_text(text, encoding="utf-8")
    return text, path


def test_export_is_a_versioned_stream_of_typed_lines_with_header_and_trailer(exported):
    text, _ = exported
    lines = [json.loads(line) for line in text.splitlines()]
    assert lines[0]["type"] == "header"
    assert (lines[0]["format"], lines[0]["version"], lines[0]["goal_id"]) == (
        "loopx-memory-export", 1, "demo")  # fmt: skip
    assert lines[-1]["type"] == "trailer"
    counts = Counter(line["type"] for line in lines[1:-1])
    assert {k: v for k, v in lines[-1]["counts"].items() if v} == dict(counts)
    states = {line["lifecycle_state"] for line in lines if line["type"] == "record"}
    assert {"active", "superseded", "retired"} <= states
    assert not any("id" in line or "pk" in line for line in lines)
    assert text == _export()  # the same state is the same bytes


def test_export_import_export_into_an_emptied_instance_is_byte_identical(exported):
    text, path = exported
    _flush()
    loaded = _import(path, "--execute")
    assert loaded.code == 0, loaded.stdout
    assert loaded.json["status"] == "imported"
    assert sum(loaded.json["created"].values()) == len(text.splitlines()) - 2
    assert not any(loaded.json["unchanged"].values())
    from django.db import connection

    connection.check_constraints()  # every imported reference holds (deferred on PostgreSQL)
    assert _export() == text
    superseded = MemoryRecord.objects.get(lifecycle_state="superseded")
    assert superseded.superseded_by.lifecycle_state == "active"


def test_a_second_import_changes_nothing(exported):
    text, path = exported
    _flush()
    assert _import(path, "--execute").code == 0
    again = _import(path, "--execute")
    assert again.code == 0
    assert not any(again.json["created"].values())
    assert sum(again.json["unchanged"].values()) == len(text.splitlines()) - 2
    assert _export() == text


def test_a_preview_reports_what_it_would_create_and_writes_nothing(exported):
    _, path = exported
    _flush()
    preview = _import(path)
    assert preview.code == 0
    assert preview.json["status"] == "preview"
    assert preview.json["created"]["record"] == 6
    assert not Goal.objects.exists()


def test_other_content_under_a_carried_key_refuses_the_whole_import(exported):
    _, path = exported
    corpus = Corpus.objects.order_by("corpus_id").first()
    _flush()
    corpus.pk = None
    corpus.owner = "user:someone-newer"
    corpus.revision += 1
    corpus.save()
    refused = _import(path, "--execute")
    assert refused.code == 2
    assert refused.json["code"] == "import_conflict"
    details = refused.json["details"]
    assert details["type"] == "corpus"
    assert details["key"] == [corpus.corpus_id]
    assert {"owner", "revision"} <= set(details["fields"])
    assert not Goal.objects.exists()  # nothing half-written
    assert Corpus.objects.get().owner == "user:someone-newer"


@pytest.mark.parametrize(
    "damage",
    [
        "truncated", "version", "unknown_type", "not_json", "extra_field",
        "wrong_kind", "bad_timestamp",
    ],
)  # fmt: skip
def test_a_damaged_stream_is_refused_whole(exported, tmp_path, damage):
    text, _ = exported
    lines = text.splitlines()
    if damage == "truncated":
        lines = lines[:-1]
    elif damage == "version":
        lines[0] = lines[0].replace('"version":1', '"version":99')
    elif damage == "unknown_type":
        lines.insert(3, json.dumps({"type": "mystery"}))
    elif damage == "not_json":
        lines.insert(3, "{not json")
    elif damage in ("wrong_kind", "bad_timestamp"):  # the goal line's created_at
        row = json.loads(lines[1])
        row["created_at"] = 12345 if damage == "wrong_kind" else "yesterday"
        lines[1] = json.dumps(row)
    else:
        row = json.loads(lines[1])
        row["surprise"] = 1
        lines[1] = json.dumps(row)
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    _flush()
    refused = _import(path, "--execute")
    assert refused.code == 2
    assert refused.json["code"] == "invalid_export"
    assert not Goal.objects.exists()


def test_export_of_an_unknown_goal_is_a_structured_error(db):
    out = run_cli("memory", "export", "--goal-id", "nope")
    assert out.code == 2
    assert out.json["code"] == "goal_not_registered"


def test_export_to_a_file_prints_its_summary(exported, tmp_path):
    text, _ = exported
    target = tmp_path / "out.jsonl"
    out = run_cli("memory", "export", "--goal-id", "demo", "--output", str(target))
    assert out.code == 0
    assert target.read_text(encoding="utf-8") == text
    assert out.json["lines"] == len(text.splitlines())
    assert out.json["counts"]["record"] == 6


def test_import_of_a_missing_file_is_a_structured_error(db, tmp_path):
    out = _import(tmp_path / "absent.jsonl")
    assert out.code == 2
    assert out.json["code"] == "invalid_input_file"


def _streamed(response) -> str:
    return b"".join(response.streaming_content).decode("utf-8")


def test_the_operator_api_streams_the_same_bytes_as_the_command(exported, operator_client):
    text, _ = exported
    response = operator_client.get("/api/v1/goals/demo/export/")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/x-ndjson"
    assert response.streaming
    assert _streamed(response) == text


def test_the_export_api_is_operator_only(demo, host_client, operator_client):
    goal_wide = host_client("demo").get("/api/v1/goals/demo/export/")
    assert goal_wide.status_code == 403
    assert goal_wide.json()["code"] == "scope_forbidden"
    other = host_client("demo", "author").get("/api/v1/goals/demo/export/")
    assert other.status_code in (403, 404)
    missing = operator_client.get("/api/v1/goals/nope/export/")
    assert missing.status_code == 404
    assert missing.json()["code"] == "goal_not_registered"
