"""``manage.py semantic_preference extension …``: LoopX's extension verbs, one module each
(``activate`` and ``deactivate`` are aliases of ``enable`` and ``disable``)."""

NAME = "extension"
HELP = "Installed semantic preference provider extensions."
subcommand_modules = (
    "preferences.cli.extension.install",
    "preferences.cli.extension.upgrade",
    "preferences.cli.extension.enable",
    "preferences.cli.extension.activate",
    "preferences.cli.extension.disable",
    "preferences.cli.extension.deactivate",
    "preferences.cli.extension.rollback",
    "preferences.cli.extension.list_extensions",
    "preferences.cli.extension.doctor",
    "preferences.cli.extension.run_extension",
)
