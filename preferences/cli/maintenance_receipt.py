"""``semantic_preference maintenance-receipt``."""

from loopx_site.core.cli import format_mapping
from preferences.cli.common import add_refs

NAME = "maintenance-receipt"
HELP = "Build a maintenance receipt (returned, not written)."
render = format_mapping


def arguments(parser) -> None:
    parser.add_argument("--trigger", required=True, help="explicit_feedback | source_truth_changed")
    parser.add_argument("--outcome", required=True, help="verified | no_write_rationale | failed")
    parser.add_argument(
        "--corpus-id", action="append", required=True, dest="corpus_ids", help="Repeatable."
    )
    add_refs(
        parser,
        "--scope-ref",
        "Repeatable provider-owned scope reference (hashed into the receipt).",
    )
    parser.add_argument("--evidence-ref", help="Compact evidence reference.")


def run(command, *, trigger, outcome, corpus_ids, scope_refs, evidence_ref, **_):
    from preferences import services
    from preferences.documents import recall as documents

    fields = services.maintenance_receipt(
        trigger=trigger,
        outcome=outcome,
        corpus_ids=corpus_ids,
        scope_refs=scope_refs,
        evidence_ref=evidence_ref,
    )
    return documents.maintenance_receipt(**fields)
