from hooks import documents, selectors, services
from hooks.errors import AREA
from hooks.services import validators
from loopx_site.core.cli import LoopxCommand, call_with_options, format_table


class Command(LoopxCommand):
    help = "Add Todos to a Goal (idempotent) or list them."
    error_area = AREA

    def add_command_arguments(self, parser):
        sub = self.add_subcommands(parser)
        add = sub.add("add", "Add a Todo to a Goal; adding the same Todo again is a no-op.")
        add.add_argument("--goal-id", required=True)
        add.add_argument("--todo-id", required=True)
        add.add_argument("--title", required=True, help="Owner prose; never sent to hooks.")
        add.add_argument("--segment-ref", help="Opaque reference of the segment it belongs to.")
        add.add_argument(
            "--validator",
            help="validator_id of an installed completion validator the server runs at "
            "settlement (see `todo validator-install`).",
        )
        add.add_argument("--execute", action="store_true", help="Add it (default: preview).")
        listing = sub.add("list", "List a Goal's Todos.")
        listing.add_argument("--goal-id", required=True)
        listing.add_argument("--state", choices=["open", "completed"])
        install = sub.add(
            "validator-install",
            "Install a completion validator extension from its manifest "
            "(loopx_completion_validator_manifest_v0; preview unless --execute).",
        )
        install.add_argument("--manifest", required=True, help="Manifest JSON file.")
        install.add_argument("--execute", action="store_true", help="Install it.")
        for name, text in (("validator-enable", "Enable"), ("validator-disable", "Disable")):
            toggle = sub.add(name, f"{text} an installed completion validator.")
            toggle.add_argument("--validator-id", required=True)
            toggle.add_argument("--execute", action="store_true")
        sub.add("validator-list", "List the installed completion validators.")

    def run_add(self, **options):
        result = call_with_options(services.add_todo, options)
        return documents.todo_add(result, execute=options["execute"])

    def run_list(self, *, goal_id, state, **_):
        return documents.todo_list(goal_id, selectors.list_todos(goal_id, state=state))

    def run_validator_install(self, *, manifest, execute, **_):
        return services.install_validator(
            validators.read_manifest_file(manifest), installed_by="operator_shell", execute=execute
        )

    def run_validator_enable(self, **options):
        return call_with_options(services.set_validator_active, options, active=True)

    def run_validator_disable(self, **options):
        return call_with_options(services.set_validator_active, options, active=False)

    def run_validator_list(self, **_):
        return services.list_validators()

    def render_text(self, payload, *, subcommand=None):
        if subcommand == "validator-list":
            return format_table(
                payload["validators"], ["validator_id", "active", "version", "manifest_digest"]
            )
        if subcommand and subcommand.startswith("validator-"):
            hint = " (nothing written; add --execute)" if payload["status"] == "preview" else ""
            return f"status: {payload['status']}{hint}\n\n" + format_table(
                [payload["validator"]], ["validator_id", "active", "version", "manifest_digest"]
            )
        todos = payload["todos"] if subcommand == "list" else [payload["todo"]]
        table = format_table(
            todos,
            ["todo_id", "state", "segment_ref", "validator", "revision", "title", "updated_at"],
        )
        if subcommand == "add":
            hint = " (nothing written; add --execute)" if payload["status"] == "preview" else ""
            return f"status: {payload['status']}{hint}\n\n{table}"
        return table
