from loopx_site.core import demo_kit, documents
from loopx_site.core.cli import LoopxCommand, render_payload


class Command(LoopxCommand):
    help = (
        "Load the demo data of every app: create what is missing, never change what "
        "exists (each loader reports every object as created or kept). With --operator, "
        "create the local operator account once and print its password; later runs keep "
        "it and its password (--reset-password sets and prints a new one)."
    )

    def add_command_arguments(self, parser):
        parser.add_argument(
            "--operator",
            default=None,
            metavar="USERNAME",
            help="Create this local superuser (once) with a fresh password.",
        )
        parser.add_argument(
            "--reset-password",
            action="store_true",
            help="Set and print a new password for --operator (the account must exist "
            "or is created). Skips loading the demo data.",
        )

    def run(self, *, operator, reset_password=False, **_):
        # The operator account first: a loader that takes ``operator`` makes it the
        # holder of the demo's operator authority (Reward Memory: the corpus owner).
        account = demo_kit.seed_operator(operator, reset=reset_password) if operator else None
        loaded = None if reset_password else demo_kit.load_all(log=self.progress, operator=operator)
        return documents.demo(loaded=loaded, operator=account)

    def render_text(self, payload, *, subcommand=None):
        parts = []
        if "loaded" in payload:
            parts.append(render_payload({"loaded": payload["loaded"]}))
        if "operator" in payload:
            op = payload["operator"]
            if op["password"]:
                parts.append(f"operator: {op['username']} / {op['password']}  ({op['status']})")
            else:
                parts.append(f"operator: {op['username']} {op['status']} ({op['hint']})")
        return "\n".join(parts)
