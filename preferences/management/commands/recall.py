from preferences.cli import recall
from preferences.cli.common import shortcut

Command = shortcut(
    "Shortcut for `semantic_preference recall` (same arguments).", recall, recall.arguments
)
