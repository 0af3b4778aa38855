"""``reward_memory register-corpus``."""

from loopx_site.core.cli import add_execute_argument
from reward_memory import services
from reward_memory.documents import corpora as corpus_documents
from reward_memory.domain.inputs import read_json

NAME = "register-corpus"
HELP = "Register or update a corpus and its standing policies (preview by default)."


def arguments(parser):
    parser.add_argument(
        "--input",
        required=True,
        help='JSON file (or -): {"corpus": {...}, "standing_policy": {...}} or {"corpora": [...]}.',
    )
    parser.add_argument("--expected-revision", type=int)
    add_execute_argument(parser)


def run(command, *, input, expected_revision=None, execute=False, **_):
    results = services.register_corpora(
        read_json(input), expected_revision=expected_revision, execute=execute
    )
    return corpus_documents.registration_batch(results)
