"""``reward_memory relevance-eval``."""

from typing import Any

from loopx_site.core import files
from loopx_site.core.cli import format_table
from reward_memory.documents import relevance as documents
from reward_memory.errors import AREA
from reward_memory.models import LEXICAL, RANKINGS
from reward_memory.services import relevance

MAX_FILE_BYTES = 64 * 1024 * 1024
HELP = (
    "Rank JSONL records for JSONL queries through recall's own ranking, in a throwaway "
    "corpus, and report top-1/top-3/MRR@10/nDCG@10 and no-answer silence."
)

NAME = "relevance-eval"


def arguments(parser) -> None:
    parser.add_argument("--records", required=True, help='JSONL file: one {"id", "text"} per line.')
    parser.add_argument(
        "--queries",
        required=True,
        help='JSONL file: one {"id", "query", "relevant"?: [record ids], "kind"?} per line; '
        "an empty relevant list marks a query that should be answered with nothing.",
    )
    parser.add_argument(
        "--limit",
        type=int,
        default=10,
        help=f"Record ids printed per query (1..{relevance.MAX_LIMIT}, default 10; "
        f"metrics always look {relevance.DEPTH} deep).",
    )
    parser.add_argument(
        "--ranking",
        choices=RANKINGS,
        default=LEXICAL,
        help="Rank as a corpus with this ranking setting ranks (default: lexical, the "
        "corpus default; hybrid fuses dense embeddings and applies the relevance floor).",
    )


def _read(path: str, option: str) -> str:
    return files.read_text(path, option=option, area=AREA, max_bytes=MAX_FILE_BYTES)


def run(command, *, records, queries, limit=10, ranking=LEXICAL, **_) -> dict[str, Any]:
    parsed = relevance.parse_records(_read(records, "records"))
    evaluation = relevance.evaluate(
        records=parsed,
        queries=relevance.parse_queries(_read(queries, "queries"), parsed),
        limit=limit,
        ranking=ranking,
    )
    return documents.relevance_eval(evaluation)


def _metric_rows(payload: dict[str, Any]) -> list[dict[str, Any]]:
    groups = [("all", payload["metrics"])] if payload["metrics"] else []
    groups += sorted(payload["metrics_by_kind"].items())
    rows = []
    for name, m in groups:
        silent = m.get("no_answer_answered_with_nothing")
        rows.append(
            {
                "queries": name,
                "judged": m["judged"],
                "top1": m.get("top1", "-"),
                "top3": m.get("top3", "-"),
                "mrr@10": m.get("mrr_at_10", "-"),
                "ndcg@10": m.get("ndcg_at_10", "-"),
                "no-answer silent": "-" if silent is None else f"{silent}/{m['no_answer_queries']}",
            }
        )
    return rows


def render(payload: dict[str, Any]) -> str:
    head = (
        f"records: {payload['records']}  queries: {payload['queries']}  "
        f"limit: {payload['limit']}  ranking: {payload['ranking']['mode']}"
    )
    rows = _metric_rows(payload)
    table = format_table(rows) if rows else "no query carries relevant: rankings only"
    missed = sorted(
        (qid for qid, rank in payload["first_relevant_rank"].items() if rank is None or rank > 3)
    )
    lines = [head, table]
    if missed:
        lines.append("relevant record not in the top 3: " + ", ".join(missed))
    return "\n".join(lines)
