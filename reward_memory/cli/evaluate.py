"""``reward_memory evaluate``."""

from loopx_site.core.cli import format_table

NAME = "evaluate"
HELP = "Stage 4: run the eight contract cases on the real code; release gate (progress on stderr)."


def run(command, **_):
    from reward_memory import evaluation
    from reward_memory.documents import evaluation as documents

    return documents.evaluation(evaluation.evaluate(progress=command.progress))


def render(payload):
    rows = [
        {"case": c["case_id"], "passed": c["passed"], "ms": c["latency_ms"]}
        for c in payload["cases"]
    ]
    gate = payload["release_gate"]
    head = f"status: {payload['status']}\nrelease_gate: {gate['status']}"
    return f"{head}\n" + format_table(rows, ["case", "passed", "ms"])
