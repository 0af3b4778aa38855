"""``manage.py configure_goal`` — enable the Reward Memory experiment for one Agent of a
Goal (a thin adapter over ``reward_memory.services.configure_goal``).

Preview (default) runs the provider preflight; ``--execute`` performs the canary write
with exact readback and commits the registry binding only when it verified.
"""

from loopx_site.core.cli import LoopxCommand, format_mapping
from reward_memory import services
from reward_memory.documents import experiments as experiment_documents
from reward_memory.errors import AREA


class Command(LoopxCommand):
    help = "Enable Reward Memory for one registered Agent of a Goal (preview by default)."
    error_area = AREA

    def add_command_arguments(self, parser):
        parser.add_argument("--goal-id", required=True)
        parser.add_argument(
            "--reward-memory-config",
            required=True,
            help="The git-ignored reward_memory_experiment_config_v1 file (in the checkout).",
        )
        parser.add_argument("--reward-memory-agent", required=True, help="The registered Agent.")
        parser.add_argument(
            "--execute", action="store_true", help="Canary write + readback, then commit."
        )

    def run(self, *, goal_id, reward_memory_config, reward_memory_agent, execute=False, **_):
        result = services.configure_goal(
            goal_id=goal_id,
            agent_id=reward_memory_agent,
            config_path=reward_memory_config,
            execute=execute,
        )
        return experiment_documents.configuration(result)

    def render_text(self, payload, *, subcommand=None):
        return format_mapping(payload, skip=("automation_intent",))
