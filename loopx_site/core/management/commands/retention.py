from loopx_site.core import documents, retention
from loopx_site.core.cli import LoopxCommand


class Command(LoopxCommand):
    help = (
        "Apply the deployment's retention policies (LOOPX_RETAIN_*_DAYS): preview the rows "
        "older than each policy's cutoff that no replay or audit still needs, or remove "
        "them with --execute (the daily beat task loopx.core.retention does the same)."
    )

    def add_command_arguments(self, parser):
        parser.add_argument(
            "--execute", action="store_true", help="Remove the rows; without it nothing is."
        )

    def run(self, *, execute=False, **_):
        return documents.retention(retention.enforce(execute=execute))
