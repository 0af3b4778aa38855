"""The built-in ``loopx-local`` semantic preference provider, as a subprocess.

``recall`` reads one ``semantic_preference_provider_request_v0`` on stdin and prints one
``semantic_preference_provider_response_v0``; ``doctor`` prints a read-only health report
and exits 2 when unhealthy; ``reindex`` rebuilds a project's note index (preview unless
``--execute``). The corpus project is ``--project`` (a config's ``args``) or the
``LOOPX_RECALL_PROJECT`` the runner sets from the verified config/token. One module per
subcommand under ``preferences/provider_cli/``.
"""

from loopx_site.core.cli import LoopxCommand


class Command(LoopxCommand):
    help = "The built-in loopx-local semantic preference provider (speaks the provider protocol)."
    error_area = "semantic_preference"
    subcommand_modules = (
        "preferences.provider_cli.recall",
        "preferences.provider_cli.doctor",
        "preferences.provider_cli.reindex",
    )
