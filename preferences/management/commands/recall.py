from preferences.cli import recall as recall_cli
from preferences.cli.shortcut import shortcut

Command = shortcut(
    "Shortcut for `semantic_preference recall` (same arguments).",
    recall_cli.add_recall_arguments,
    recall_cli.run_recall,
    recall_cli.render_recall,
)
