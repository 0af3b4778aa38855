import secrets

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils.module_loading import import_string

from loopx_site.core.cli import LoopxCommand, render_payload


def _label(dotted: str) -> str:
    """``hooks.demo.load`` → ``hooks``; ``preferences.demo_recall.load`` →
    ``preferences.demo_recall`` (one key per loader, none overwritten)."""
    module = dotted.rsplit(".", 1)[0]
    return module.removesuffix(".demo")


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
        payload = {"schema_version": "loopx_demo_v0"}
        if not reset_password:
            loaded = {}
            loaders = list(settings.LOOPX_DEMO_LOADERS)
            with self.progress_bar(total=len(loaders), desc="demo", unit="loader") as bar:
                for dotted in loaders:
                    loader = import_string(dotted)
                    with transaction.atomic():
                        loaded[_label(dotted)] = loader(log=self.progress)
                    bar.update(1)
            payload["loaded"] = loaded
        if operator:
            payload["operator"] = self._operator(operator, reset=reset_password)
        return payload

    def _operator(self, username: str, *, reset: bool) -> dict:
        user_model = get_user_model()
        with transaction.atomic():
            user, created = user_model.objects.get_or_create(
                username=username, defaults={"is_staff": True, "is_superuser": True}
            )
            if not (created or reset):
                return {
                    "username": username,
                    "status": "kept",
                    "password": None,
                    "hint": "password unchanged; `make reset-operator-password` sets a new one",
                }
            password = secrets.token_urlsafe(12)
            user.is_staff = user.is_superuser = True
            user.set_password(password)
            user.save()
        return {
            "username": username,
            "status": "created" if created else "password_reset",
            "password": password,
            "hint": "shown once; keep it",
        }

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
