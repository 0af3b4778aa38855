"""``todo validator-enable``."""

from hooks import documents, services
from hooks.todo_cli.common import render_validator, toggle_arguments
from loopx_site.core.cli import call_with_options

NAME = "validator-enable"
HELP = "Enable an installed completion validator."
arguments = toggle_arguments
render = render_validator


def run(command, **options):
    return documents.validator_operation_result(
        call_with_options(services.set_validator_active, options, active=True)
    )
