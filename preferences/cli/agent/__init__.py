"""``manage.py semantic_preference agent read|observe|remember|retire|history|migrate-scope``:
a group of subcommands, one module each (``loopx_site.core.cli.add_subcommand_modules``).
Each parses, calls one journal service and renders LoopX's document through
``preferences.documents``."""

NAME = "agent"
HELP = "The explicit per-(Goal, Agent) preference journal."
subcommand_modules = (
    "preferences.cli.agent.read",
    "preferences.cli.agent.observe",
    "preferences.cli.agent.remember",
    "preferences.cli.agent.retire",
    "preferences.cli.agent.history",
    "preferences.cli.agent.migrate_scope",
)
