"""``reward_memory provider-deletion``."""

from reward_memory import selectors
from reward_memory.documents import records as record_documents

NAME = "provider-deletion"
HELP = "Show a record's provider delete: pending, confirmed or failed (bounded reason)."


def arguments(parser):
    parser.add_argument("--record-ref", required=True)


def run(command, *, record_ref, **_):
    record = selectors.get_record(record_ref)
    return record_documents.provider_deletion(record, selectors.provider_deletion_state(record))
