"""Relevance of the local provider's ranking: how often the record a person would pick
(``bench/relevance_set.py``) is in the top 3, with the analyzer before stemming and stop
words (``bm25.PLAIN``) and with the index's English analyzer (``bm25.ENGLISH``).

Both rankings are the exact reference BM25 over the same records; the English one is what
``fulltext.search`` returns (the test suite checks the index against the reference). Prints
one JSON line (the table ``bench/render_results.py`` shows) and, with ``--format text``, a
per-query table on stderr.
"""

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.relevance_set import QUERIES, RECORDS
from loopx_site.engines.fulltext import bm25

TOP = 3


def evaluate(analyzer: bm25.Analyzer) -> list[dict]:
    reference = bm25.Reference(RECORDS.items(), analyzer=analyzer)
    rows = []
    for query, expected in QUERIES:
        ranked = [ref for ref, _ in reference.rank(query, 10)]
        rank = ranked.index(expected) + 1 if expected in ranked else None
        rows.append({"query": query, "expected": expected, "rank": rank})
    return rows


def rate(rows: list[dict]) -> float:
    return sum(1 for r in rows if r["rank"] is not None and r["rank"] <= TOP) / len(rows)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--format", choices=["json", "text"], default="json")
    args = parser.parse_args(argv)
    before, after = evaluate(bm25.PLAIN), evaluate(bm25.ENGLISH)
    if args.format == "text":
        for b, a in zip(before, after, strict=True):
            print(
                f"{b['query'][:44]:<44} {b['rank'] or '-':>6} {a['rank'] or '-':>6}",
                file=sys.stderr,
            )
    print(
        json.dumps(
            {
                "bench": "recall_relevance",
                "queries": len(QUERIES),
                "records": len(RECORDS),
                "top": TOP,
                "top3_rate_plain": round(rate(before), 3),
                "top3_rate_english": round(rate(after), 3),
                "first_rate_plain": round(sum(r["rank"] == 1 for r in before) / len(before), 3),
                "first_rate_english": round(sum(r["rank"] == 1 for r in after) / len(after), 3),
                "missed_english": [r["query"] for r in after if not r["rank"] or r["rank"] > TOP],
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
