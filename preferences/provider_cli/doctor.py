"""``local_preference_provider doctor``: a read-only health report (exit 2 when unhealthy)."""

import os

NAME = "doctor"
HELP = "Read-only health report of the provider."


def arguments(parser):
    parser.add_argument("--project", help="Also check this project's notes and index.")


def run(command, *, project=None, **_):
    from preferences.recall import local_provider
    from preferences.recall.errors import SemanticPreferenceError

    project = project or local_provider.project_from_env(os.environ)
    report = local_provider.doctor_report(project=project)
    if not report["healthy"]:
        raise SemanticPreferenceError(
            "provider_unhealthy",
            "The loopx-local index disagrees with the project's notes; run reindex.",
            details={k: v for k, v in report.items() if k != "schema_version"},
        )
    return report
