"""``manage.py reward_memory …`` — one module per subcommand under ``reward_memory/cli/``
(``loopx_site.core.cli.add_subcommand_modules``), each a thin adapter over
``reward_memory.services``. A new subcommand is a new module there plus one line below."""

from loopx_site.core.cli import LoopxCommand, format_mapping
from reward_memory.cli.common import render_guarded
from reward_memory.errors import AREA


class Command(LoopxCommand):
    help = "Reward Memory: corpora, candidate review, ingest, recall and receipts."
    error_area = AREA
    subcommand_modules = (
        "reward_memory.cli.architecture",
        "reward_memory.cli.corpora",
        "reward_memory.cli.register_corpus",
        "reward_memory.cli.candidate_review",
        "reward_memory.cli.apply_review",
        "reward_memory.cli.checkpoint",
        "reward_memory.cli.revoke_record",
        "reward_memory.cli.supersede_record",
        "reward_memory.cli.retire_record",
        "reward_memory.cli.operator_control",
        "reward_memory.cli.route_check",
        "reward_memory.cli.mark_experience",
        "reward_memory.cli.reflection_validate",
        "reward_memory.cli.reopen",
        "reward_memory.cli.ingest_event",
        "reward_memory.cli.reconcile_ingest",
        "reward_memory.cli.recall",
        "reward_memory.cli.application_receipt",
        "reward_memory.cli.provider_deletion",
        "reward_memory.cli.expire_records",
        "reward_memory.cli.hook",
        "reward_memory.cli.evaluate",
        "reward_memory.cli.dogfood_evaluate",
        "reward_memory.cli.experiment_status",
        "reward_memory.cli.relevance_eval",
        "reward_memory.cli.corpus_ranking",
        "reward_memory.cli.embed_backfill",
    )

    def render_text(self, payload, *, subcommand=None):
        # a subcommand without its own ``render``: a guarded document, or its fields
        if isinstance(payload.get("guard"), dict):
            return render_guarded(payload)
        return format_mapping(payload)
