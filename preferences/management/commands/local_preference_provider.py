"""The built-in ``loopx-local`` semantic preference provider, as a subprocess.

``recall`` reads one ``semantic_preference_provider_request_v0`` on stdin and prints one
``semantic_preference_provider_response_v0``; ``doctor`` prints a read-only health report
and exits 2 when unhealthy; ``reindex`` rebuilds a project's note index (preview unless
``--execute``). The corpus project is ``--project`` (a config's ``args``) or the
``LOOPX_RECALL_PROJECT`` the runner sets from the verified config/token.
"""

import os
import sys

from loopx_site.core.cli import LoopxCommand
from preferences.recall import local_provider
from preferences.recall.errors import SemanticPreferenceError

MAX_STDIN = local_provider.MAX_REQUEST_BYTES + 1


def _read_stdin() -> bytes:
    if sys.stdin is None or sys.stdin.isatty():
        return b""
    stream = getattr(sys.stdin, "buffer", None)
    if stream is not None:
        return stream.read(MAX_STDIN)
    return sys.stdin.read(MAX_STDIN).encode("utf-8")


class Command(LoopxCommand):
    help = "The built-in loopx-local semantic preference provider (speaks the provider protocol)."
    error_area = "semantic_preference"

    def add_command_arguments(self, parser):
        sub = self.add_subcommands(parser)
        recall = sub.add("recall", "Answer one provider request read from stdin.")
        recall.add_argument("--project", help="Corpus project (default: the request's).")
        doctor = sub.add("doctor", "Read-only health report of the provider.")
        doctor.add_argument("--project", help="Also check this project's notes and index.")
        reindex = sub.add("reindex", "Rebuild one project's note index.")
        reindex.add_argument("--project", required=True)
        reindex.add_argument("--execute", action="store_true")

    def run_recall(self, *, project=None, **_):
        project = project or local_provider.project_from_env(os.environ)
        request = local_provider.parse_request(_read_stdin(), project=project)
        return local_provider.recall_response(**request)

    def run_doctor(self, *, project=None, **_):
        project = project or local_provider.project_from_env(os.environ)
        report = local_provider.doctor_report(project=project)
        if not report["healthy"]:
            raise SemanticPreferenceError(
                "provider_unhealthy",
                "The loopx-local index disagrees with the project's notes; run reindex.",
                details={k: v for k, v in report.items() if k != "schema_version"},
            )
        return report

    def run_reindex(self, *, project, execute, **_):
        return local_provider.reindex_project(project=project, execute=execute)
