"""``manage.py todo …`` — one module per subcommand under ``hooks/todo_cli/``
(``loopx_site.core.cli.add_subcommand_modules``)."""

from hooks.errors import AREA
from loopx_site.core.cli import LoopxCommand


class Command(LoopxCommand):
    help = "Add Todos to a Goal (idempotent) or list them."
    error_area = AREA
    subcommand_modules = (
        "hooks.todo_cli.add",
        "hooks.todo_cli.list_todos",
        "hooks.todo_cli.validator_install",
        "hooks.todo_cli.validator_enable",
        "hooks.todo_cli.validator_disable",
        "hooks.todo_cli.validator_list",
    )
