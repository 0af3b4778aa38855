from preferences.cli import agent as agent_cli
from preferences.cli.shortcut import shortcut

Command = shortcut(
    "Shortcut for `semantic_preference agent remember` (same arguments).",
    agent_cli.add_remember_arguments,
    agent_cli.run_remember,
    agent_cli.render_write,
)
