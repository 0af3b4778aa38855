import secrets

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils.module_loading import import_string

from loopx_site.core.cli import LoopxCommand


class Command(LoopxCommand):
    help = (
        "Load the demo data of every app (idempotent) and, with --operator, create or reset "
        "the local operator account, printing its credentials."
    )

    def add_command_arguments(self, parser):
        parser.add_argument(
            "--operator",
            default=None,
            metavar="USERNAME",
            help="Create/reset this local superuser with a fresh password.",
        )

    def run(self, *, operator, **_):
        loaded = {}
        for dotted in settings.LOOPX_DEMO_LOADERS:
            loader = import_string(dotted)
            with transaction.atomic():
                loaded[dotted.rsplit(".", 2)[0]] = loader(log=self.progress)
        payload = {"schema_version": "loopx_demo_v0", "loaded": loaded}
        if operator:
            password = secrets.token_urlsafe(12)
            user_model = get_user_model()
            user, _ = user_model.objects.get_or_create(username=operator)
            user.is_staff = user.is_superuser = True
            user.set_password(password)
            user.save()
            payload["operator"] = {"username": operator, "password": password}
        return payload

    def render_text(self, payload, *, subcommand=None):
        lines = [f"{app}: {summary}" for app, summary in payload["loaded"].items()]
        if "operator" in payload:
            op = payload["operator"]
            lines.append(f"operator: {op['username']} / {op['password']}")
        return "\n".join(lines)
