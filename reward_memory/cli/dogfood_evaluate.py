"""``reward_memory dogfood-evaluate``."""

from loopx_site.core.cli import format_mapping, format_table
from reward_memory.domain.inputs import read_json

NAME = "dogfood-evaluate"
HELP = "Stage 5: dogfood receipts v1, batch readiness and utility observations (no write)."


def arguments(parser):
    parser.add_argument("--input", required=True, help="Compact observations JSON (or -).")


def run(command, *, input, **_):
    from reward_memory import dogfood
    from reward_memory.documents import dogfood as documents

    document = read_json(input)
    command.progress("running the Stage 4 gate for the batch readiness")
    return documents.batch(dogfood.evaluate_batch(document))


def exit_status(payload):
    # LoopX's dogfood-evaluate exits 2 on a batch that is not ready (``ok: false``)
    return 2 if payload.get("ok") is False else 0


def render(payload):
    head = format_mapping(
        payload,
        skip=(
            "receipts",
            "operator_controls",
            "operator_control_records",
            "metrics",
            "boundaries",
            "reason_codes",
        ),
    )
    rows = [
        {"domain": r["domain_id"], "disposition": r["application_disposition"],
         "utility": (r["utility_observation"] or {}).get("label", "-")}
        for r in payload["receipts"]
    ]  # fmt: skip
    reasons = ", ".join(payload["reason_codes"]) or "-"
    return f"{head}\nreasons: {reasons}\n" + format_table(
        rows, ["domain", "disposition", "utility"]
    )
