"""``reward_memory corpora``."""

from loopx_site.core.cli import format_table
from reward_memory import selectors, services
from reward_memory.documents import corpora as corpus_documents
from reward_memory.documents import registry

NAME = "corpora"
HELP = "List registered corpora with their five health states."


def arguments(parser):
    parser.add_argument("--corpus-id", help="Only this corpus.")


def run(command, *, corpus_id=None, **_):
    rows = [selectors.get_corpus(corpus_id)] if corpus_id else selectors.list_corpora()
    return corpus_documents.corpus_list(services.corpora_health(rows))


def render(payload):
    rows = [
        {
            "corpus_id": c["corpus_id"],
            "class": c["memory_class"],
            "project": c["project"],
            "surfaces": ",".join(c["surfaces"]),
            "provider": c["provider"]["provider_id"],
            "health": registry.health_summary({"health": c["health"]}),
        }
        for c in payload["corpora"]
    ]
    return format_table(rows, ["corpus_id", "class", "project", "surfaces", "provider", "health"])
