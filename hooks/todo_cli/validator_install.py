"""``todo validator-install``."""

from hooks import documents, services
from hooks.services import validators
from hooks.todo_cli.common import render_validator

NAME = "validator-install"
HELP = (
    "Install a completion validator extension from its manifest "
    "(loopx_completion_validator_manifest_v0; preview unless --execute)."
)
render = render_validator


def arguments(parser):
    parser.add_argument("--manifest", required=True, help="Manifest JSON file.")
    parser.add_argument("--execute", action="store_true", help="Install it.")


def run(command, *, manifest, execute, **_):
    return documents.validator_operation_result(
        services.install_validator(
            validators.read_manifest_file(manifest), installed_by="operator_shell", execute=execute
        )
    )
