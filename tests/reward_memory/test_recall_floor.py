"""Recall from a hybrid corpus: relevant records come back, a query nothing answers
comes back empty with the reason ``nothing_relevant`` (and lexical corpora are as
before)."""

import pytest

from reward_memory import services
from reward_memory.errors import RewardMemoryError
from reward_memory.models import HYBRID
from reward_memory.services.ranking import set_corpus_ranking
from tests.helpers import run_cli
from tests.reward_memory import factories as f

SUMMARIES = [
    "Lead PR descriptions with the user-visible effect.",
    "List the validation commands in the PR description.",
    "Never commit API keys or passwords; read them from the environment.",
]


@pytest.fixture
def refs(corpus):
    out = []
    for i, summary in enumerate(SUMMARIES):
        receipt = f.ingested(
            event=f.scoped_event(f"ev-{i}", content_summary=summary),
            goal_id="demo",
            agent_id="author",
            execute=True,
        )
        assert receipt["status"] == "activated"
        out.append(receipt["record_ref"])
    return out


def _guidance(query):
    return services.recall_guidance(
        goal_id="demo", agent_id="author", corpus_id="prefs", surface=f.SURFACE, query=query
    )


def test_hybrid_corpus_answers_a_relevant_query(db, corpus, refs):
    corpus.ranking = HYBRID
    corpus.save(update_fields=["ranking"])
    got = _guidance("I pasted a password into the settings file")
    assert got.status == "ok"
    assert got.records[0].record_ref == refs[2]
    assert got.nothing_relevant is False


def test_hybrid_corpus_answers_nothing_relevant_with_a_reason(db, corpus, refs):
    corpus.ranking = HYBRID
    corpus.save(update_fields=["ranking"])
    got = _guidance("how long to bake sourdough bread in the oven")
    assert got.status == "empty"
    assert got.records == []
    assert got.nothing_relevant is True
    result = f.recalled(
        request=f.recall_request(corpus, queries=["bake sourdough bread"]), execute=True
    )
    assert result["status"] == "empty"
    assert result["reason"] == "nothing_relevant"


def test_lexical_corpus_keeps_its_ranking_and_has_no_floor(db, corpus, refs):
    got = _guidance("the PR description")
    assert got.status == "ok"
    assert got.nothing_relevant is False


def test_the_owner_switches_a_corpus_to_hybrid_and_back(db, corpus):
    preview = run_cli(
        "reward_memory", "corpus-ranking", "--corpus-id", "prefs", "--ranking", "hybrid",
        "--actor", f.OWNER,
    )  # fmt: skip
    assert preview.code == 0, preview.stdout
    assert preview.json["ranking"] == "lexical"
    done = run_cli(
        "reward_memory", "corpus-ranking", "--corpus-id", "prefs", "--ranking", "hybrid",
        "--actor", f.OWNER, "--execute",
    )  # fmt: skip
    assert done.json["ranking"] == "hybrid"
    corpus.refresh_from_db()
    assert corpus.ranking == HYBRID
    assert corpus.revision == 2


def test_only_the_owner_sets_the_ranking(db, corpus):
    with pytest.raises(RewardMemoryError) as err:
        set_corpus_ranking(
            corpus_id="prefs", ranking=HYBRID, principal=f.op(f.REVIEWER), execute=True
        )
    assert err.value.code == "owner_not_authorized"
    corpus.refresh_from_db()
    assert corpus.ranking == "lexical"
