"""``manage.py reward_memory relevance-eval``: rankings and metrics from a throwaway corpus
that leaves nothing behind; bad files are one structured error (exit 2)."""

import json

import pytest

from loopx_site.core.models import SearchDocument, SearchNamespace
from reward_memory.models import LocalProviderDocument
from reward_memory.services import relevance
from tests.helpers import run_cli

RECORDS = [
    {"id": "tests", "text": "Write the regression test before the fix and show it failing."},
    {"id": "secrets", "text": "Never commit API keys; read them from the environment."},
    {"id": "changelog", "text": "Add a changelog entry for every user-visible change."},
    {"id": "branches", "text": "Do not switch or delete branches without permission."},
]
QUERIES = [
    {"id": "q-tests", "query": "regression test before fixing", "relevant": ["tests"]},
    {"id": "q-keys", "query": "where do API keys go", "relevant": ["secrets"], "kind": "situation"},
    {"id": "q-none", "query": "bake sourdough bread", "relevant": [], "kind": "negative"},
    {"id": "q-unjudged", "query": "changelog entry"},
]


def _jsonl(tmp_path, name, rows):
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def _run(tmp_path, records=RECORDS, queries=QUERIES, *extra):
    return run_cli(
        "reward_memory", "relevance-eval", "--records", _jsonl(tmp_path, "r.jsonl", records),
        "--queries", _jsonl(tmp_path, "q.jsonl", queries), *extra,
    )  # fmt: skip


def test_rankings_and_metrics_through_the_local_provider(db, tmp_path):
    result = _run(tmp_path)
    assert result.code == 0, result.stdout
    doc = result.json
    assert doc["schema_version"] == "reward_memory_relevance_eval_v0"
    assert doc["rankings"]["q-tests"][0] == "tests"
    assert doc["rankings"]["q-keys"][0] == "secrets"
    assert doc["rankings"]["q-none"] == []  # no word in common: nothing is returned
    assert doc["rankings"]["q-unjudged"] == ["changelog"]
    metrics = doc["metrics"]
    assert metrics["judged"] == 2
    assert metrics["no_answer_queries"] == 1
    assert metrics["top1"] == metrics["top3"] == metrics["mrr_at_10"] == 1.0
    assert metrics["ndcg_at_10"] == 1.0
    assert metrics["no_answer_share_answered_with_nothing"] == 1.0
    assert doc["metrics_by_kind"]["situation"]["top1"] == 1.0
    assert doc["first_relevant_rank"] == {"q-tests": 1, "q-keys": 1}


def test_the_throwaway_corpus_leaves_nothing_behind(db, tmp_path):
    before = (SearchNamespace.objects.count(), SearchDocument.objects.count())
    assert _run(tmp_path).code == 0
    assert LocalProviderDocument.objects.count() == 0
    assert (SearchNamespace.objects.count(), SearchDocument.objects.count()) == before


def test_limit_caps_the_printed_ranking(db, tmp_path):
    queries = [{"id": "q", "query": "never commit change entry branches test", "relevant": []}]
    result = _run(tmp_path, RECORDS, queries, "--limit", "2")
    assert result.code == 0, result.stdout
    assert len(result.json["rankings"]["q"]) == 2
    assert result.json["metrics"]["no_answer_answered_with_nothing"] == 0


def test_text_format_is_a_table(db, tmp_path):
    result = _run(tmp_path, RECORDS, QUERIES, "--format", "text")
    assert result.code == 0, result.stdout
    assert "NDCG@10" in result.stdout
    assert "negative" in result.stdout


def test_metrics_rank_deeper_relevant_records_lower():
    scores = relevance._scores(["a", "b", "c", "d"], ("c", "z"))
    assert scores["top1"] == 0.0
    assert scores["top3"] == 1.0
    assert scores["mrr_at_10"] == pytest.approx(1 / 3)
    assert scores["ndcg_at_10"] == pytest.approx(0.5 / (1 + 1 / 1.584962500721156))


@pytest.mark.parametrize(
    ("records", "queries", "field", "words"),
    [
        ("not json\n", [QUERIES[0]], "records", "line 1"),
        ([{"id": "a"}], [QUERIES[0]], "records", '"text"'),
        ([RECORDS[0], RECORDS[0]], [QUERIES[0]], "records", "repeated"),
        ([], [QUERIES[0]], "records", "no record"),
        (RECORDS, [{"id": "q", "query": "x", "relevant": ["nope"]}], "queries", "unknown"),
        (RECORDS, [{"id": "q", "query": "x", "relevant": "tests"}], "queries", "list"),
        (RECORDS, [{"id": "q", "query": ""}], "queries", '"query"'),
    ],
)
def test_bad_files_are_one_structured_error(db, tmp_path, records, queries, field, words):
    r = tmp_path / "r.jsonl"
    rows = records if isinstance(records, str) else "".join(json.dumps(x) + "\n" for x in records)
    r.write_text(rows)
    result = run_cli(
        "reward_memory", "relevance-eval", "--records", str(r),
        "--queries", _jsonl(tmp_path, "q.jsonl", queries),
    )  # fmt: skip
    assert result.code == 2, result.stdout
    assert result.json["code"] == "invalid_input_file"
    assert result.json["field"] == field
    assert words in result.json["error"]


def test_missing_file_and_bad_limit_are_errors(db, tmp_path):
    missing = run_cli(
        "reward_memory", "relevance-eval", "--records", str(tmp_path / "nope"),
        "--queries", _jsonl(tmp_path, "q.jsonl", QUERIES),
    )  # fmt: skip
    assert missing.code == 2
    assert missing.json["field"] == "records"
    assert _run(tmp_path, RECORDS, QUERIES, "--limit", "0").code == 2


def test_hybrid_ranking_runs_the_same_records_through_the_fusion_and_the_floor(db, tmp_path):
    result = _run(tmp_path, RECORDS, QUERIES, "--ranking", "hybrid")
    assert result.code == 0, result.stdout
    assert result.json["ranking"]["mode"] == "hybrid"
    assert result.json["rankings"]["q-keys"][0] == "secrets"
    assert result.json["rankings"]["q-none"] == []
    assert LocalProviderDocument.objects.count() == 0
