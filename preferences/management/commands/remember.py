from preferences.cli.agent import remember
from preferences.cli.common import shortcut

Command = shortcut(
    "Shortcut for `semantic_preference agent remember` (same arguments).",
    remember,
    remember.add_remember_arguments,
)
