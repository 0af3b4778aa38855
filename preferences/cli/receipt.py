"""``semantic_preference receipt``."""

from loopx_site.core.cli import format_mapping
from preferences.cli.common import add_refs

NAME = "receipt"
HELP = "Build an application receipt (returned, not written)."
render = format_mapping


def arguments(parser) -> None:
    parser.add_argument("--surface", required=True)
    parser.add_argument("--application-id", required=True)
    parser.add_argument("--outcome", required=True, help="applied | ignored | failed")
    add_refs(
        parser,
        "--preference-ref",
        "Optional, repeatable provider-owned reference (hashed into the receipt).",
    )
    parser.add_argument("--artifact-ref", help="Public https:// URL of the artifact.")


def run(command, *, surface, application_id, outcome, preference_refs, artifact_ref, **_):
    from preferences import services
    from preferences.documents import recall as documents

    fields = services.application_receipt(
        surface=surface,
        application_id=application_id,
        outcome=outcome,
        preference_refs=preference_refs,
        artifact_ref=artifact_ref,
    )
    return documents.application_receipt(**fields)
