"""Regenerate the performance section of ``bench/RESULTS.md`` from benchmark JSON lines.

Usage: python bench/render_results.py bench/results.jsonl bench/RESULTS.md

Only the text between ``<!-- bench:start -->`` and ``<!-- bench:end -->`` is replaced (the
markers are added at the top when missing); everything else in the file is kept.
"""

import datetime as dt
import json
import sys
from pathlib import Path

START, END = "<!-- bench:start -->", "<!-- bench:end -->"


def fmt(value) -> str:
    return "—" if value is None else str(value)


def recall_rows(line: dict) -> list[str]:
    """One row per size. Lines from 2026-12-01 on carry the overhead (median of service −
    ranking, paired call by call), peak RSS and the load seconds, later ones the
    statements per recall and the overhead measured inside each recall; older lines
    render without them."""
    rows = []
    when = f", {line['date']}" if line.get("date") else ""
    for size in line["sizes"]:
        k = str(size)
        extra = ""
        if "overhead_p50_ms" in line:
            extra = (
                f"; overhead (service − ranking) median **+{line['overhead_p50_ms'][k]} ms** "
                f"(CPU +{line.get('overhead_cpu_p50_ms', {}).get(k)} ms"
                + (
                    f"; inside each recall +{line['own_p50_ms'][k]} ms, p95 "
                    f"+{line['own_p95_ms'][k]} ms"
                    if "own_p50_ms" in line
                    else ""
                )
                + "); peak RSS "
                f"{line.get('peak_rss_mb', {}).get(k)} MiB; loaded in "
                f"{line.get('load_seconds', {}).get(k)} s"
            )
        if "service_statements" in line:
            extra += (
                f"; {line['service_statements'][k]} statements per recall besides the "
                f"ranking's {line['ranking_statements'][k]}"
            )
        load = line.get("load_average_1m_by_size", {}).get(k, line.get("load_average_1m"))
        target = (
            "overlap 1.00, overhead ≤ +3 ms, p95 ≤ 30 ms at 1M"
            if "overhead_p50_ms" in line
            else "overlap 1.00, p95 ≤ 20 ms at 100k"
        )
        rows.append(
            f"| recall, {line['backend']}, {size:,} records (+{line['other_corpus_records']:,} "
            f"in another corpus){when} | overlap {fmt(line['overlap_top4'][k])}, exact #1 "
            f"{line['exact_first'][k]}; service p50 {line['p50_ms'][k]} / p95 "
            f"**{line['p95_ms'][k]} ms** (CPU p95 {line.get('cpu_p95_ms', {}).get(k)} ms); "
            f"ranking alone p50 {line.get('ranking_p50_ms', {}).get(k)} / p95 "
            f"{line['ranking_p95_ms'][k]} ms (CPU p95 "
            f"{line.get('ranking_cpu_p95_ms', {}).get(k)} ms){extra}, load {load} "
            f"| {target} | {durability(line)} |"
        )
    return rows


def tantivy_rows(line: dict) -> list[str]:
    """One row per size: CPU per top-k query and build, ours ÷ Tantivy's
    (``bench/tantivy_bench.py``)."""
    rows = []
    for size in line["sizes"]:
        k = str(size)
        s, b = line["search"][k], line["build"][k]
        ours, theirs = s["ours"], s["tantivy"]
        rows.append(
            f"| lexical ranking ÷ Tantivy, {size:,} records, top-{line['limit']}"
            f"{'' if line.get('copy', True) else ', without the copy'} "
            f"({line['date']}) | CPU p50 {ours['cpu_p50_ms']} ÷ {theirs['cpu_p50_ms']} ms = "
            f"**{s['cpu_p50_ratio']}×**, p95 {ours['cpu_p95_ms']} ÷ {theirs['cpu_p95_ms']} ms = "
            f"**{s['cpu_p95_ratio']}×** (wall p50 {s['wall_p50_ratio']}×); build CPU "
            f"{b['ours_cpu_s']} ÷ {b['tantivy_cpu_s']} s = **{b['cpu_ratio']}×**; overlap "
            f"with exact: ours {ours['overlap']}, Tantivy {theirs['overlap']} (same scores "
            f"{s['engines_agree']['same_scores']}), load {s['load_average_1m']} "
            f"| ≤ 2× per query, build ≤ 3× | {durability(line)} |"
        )
    return rows


def durability(line: dict) -> str:
    d = line.get("durability") or {}
    if "ours" in d:
        return (
            "ours "
            + durability({"durability": d["ours"]})
            + "; peer "
            + durability({"durability": d["peer"]})
        )
    if d.get("backend") == "sqlite":
        return f"SQLite {d.get('journal_mode')}, synchronous={d.get('synchronous')}"
    if d.get("backend") == "postgresql":
        return (
            f"PostgreSQL fsync={d.get('fsync')}, synchronous_commit={d.get('synchronous_commit')}"
        )
    return "—"


def statuses(line: dict) -> str:
    """HTTP statuses of a load phase (200 read, 201 remember applied, 409 conflict)."""
    return ", ".join(f"{code}: {n}" for code, n in sorted(line.get("statuses", {}).items()))


def durability_of_journal(line: dict) -> str:
    """The journal benchmark prints its settings without the backend inside."""
    return durability({"durability": {"backend": line["backend"], **line["durability"]}})


def row(line: dict) -> list[str]:
    bench = line.get("bench") or line.get("benchmark")
    if bench == "reward_memory_recall_local":
        return recall_rows(line)
    if bench == "fulltext_vs_tantivy":
        return tantivy_rows(line)
    if bench == "cli_startup":
        cmp = ""
        if "this_over_rev" in line:
            cmp = (
                f"; ÷ {line['compare_rev']}: wall **{line['this_over_rev']}**, "
                f"CPU {line['this_over_rev_cpu']}"
            )
        return [
            f"| CLI start-up (`{line['command']}`) | median wall {line['median_wall_ms']} ms, "
            f"CPU {line['median_cpu_ms']} ms; ÷ `import django` "
            f"{line['ratio_to_import_django']}{cmp} (load {line.get('load_average_1m')}) "
            f"| ≤ 0.5× the pre-change figure | SQLite |"
        ]
    if bench == "api_load":
        extra = ""
        if line["phase"] == "open_loop":
            extra = (
                f", offered {line['offered_rps']} req/s, "
                f"{line.get('started_over_5ms_late', 0)} started > 5 ms late"
            )
        if line["phase"] == "closed_loop":
            extra = f", {line['clients']} clients"
        target = {
            "single_client_get": "p50 ≤ 4 ms (SQLite)",
            "closed_loop": "≥ 540 req/s, zero 5xx (PostgreSQL)",
            "open_loop": "zero 5xx",
        }[line["phase"]]
        return [
            f"| API {line['phase'].replace('_', ' ')}, gunicorn {line['gunicorn_workers']} "
            f"workers{extra} | **{line['throughput_rps']} req/s**, p50 {line['p50_ms']} ms, "
            f"p99 {line['p99_ms']} ms, 5xx {line['five_xx']} of {line['requests']}, statuses "
            f"{statuses(line)} (load {line.get('load_average_1m')}) | {target} | "
            f"{durability(line)} |"
        ]
    if bench == "preferences":
        # Lines from 2026-12-01 on carry their date, the load average and the remember
        # target of issue 25 (≤ 2×; ≤ 4× before).
        backend = "SQLite" if line["backend"] == "sqlite" else "PostgreSQL"
        when = f", {line['date']}" if line.get("date") else ""
        load = f" (load {line['load_average_1m']})" if "load_average_1m" in line else ""
        remember_target = "≤ 2×" if line.get("remember_ratio_target") == "<= 2" else "≤ 4×"
        return [
            f"| preference read, 64 keys ÷ raw SELECT of the same rows ({backend}{when}) | "
            f"{line['read_64_keys_median_ms']} ms ÷ {line['raw_select_same_rows_median_ms']} ms "
            f"= **{line['read_ratio']}×**{load} | ≤ 2× | {durability_of_journal(line)} |",
            f"| preference remember ÷ raw replay of its {line['remember_statements']:g} "
            f"statements ({backend}{when}) | {line['remember_median_ms']} ms ÷ "
            f"{line['raw_replay_same_statements_median_ms']} ms = **{line['remember_ratio']}×**"
            f"{load} | {remember_target} | {durability_of_journal(line)} |",
            f"| preference history page at depth {line['history_depth']:,} ÷ first page "
            f"({backend}{when}) | {line['history_page_at_depth_ms']} ms ÷ "
            f"{line['history_first_page_ms']} ms = **{line['history_ratio']}**{load} | ≤ 1.5 | "
            f"{durability_of_journal(line)} |",
        ]
    if bench == "peer_sqlitestore":
        r, w, t = line["read_64"], line["remember"], line["two_writers"]
        return [
            f"| peer: read 64 ÷ `SqliteStore.search` | {r['ours_median_us']} µs ÷ "
            f"{r['peer_median_us']} µs = **{r['ratio']}×** | ≤ 1.0× | {durability(line)} |",
            f"| peer: remember ÷ `SqliteStore.put` | {w['ours_median_us']} µs ÷ "
            f"{w['peer_median_us']} µs = **{w['ratio']}×** | ≤ 4× | {durability(line)} |",
            f"| peer: two writers from one read | peer keeps {t['peer_final_notes']} (lost an "
            f"edit: {t['peer_lost_an_edit']}); ours: stale writer → `{t['ours_stale_writer']}` "
            f"| stale writer rejected | — |",
        ]
    if bench == "recall_relevance":
        return [
            f"| recall relevance: the record a person would pick in the top {line['top']} "
            f"({line['queries']} natural queries, {line['records']} records) | before stemming "
            f"and stop words {line['top3_rate_plain']:.0%} → **{line['top3_rate_english']:.0%}** "
            f"(first: {line['first_rate_plain']:.0%} → {line['first_rate_english']:.0%}) | "
            f"reported | — |"
        ]
    if bench == "hooks_settle_three_hooks":
        return [
            f"| settle + 3 post-writeback hooks, added median | "
            f"{line['median_ms_phase_disabled']} → {line['median_ms_three_hooks']} ms: "
            f"**+{line['added_median_ms']} ms** (ratio {line['median_ratio']}) | ≤ 10 ms | "
            f"SQLite (bench default) |"
        ]
    if bench == "mcp_http_vs_api":
        return [
            f"| MCP over HTTP ÷ the same API call, `{op}` (gunicorn {line['gunicorn_workers']} "
            f"worker, {line['rounds']} calls each, alternating) | MCP p50 "
            f"{line[f'{key}_mcp']['p50_ms']} / p95 {line[f'{key}_mcp']['p95_ms']} ms vs API "
            f"p50 {line[f'{key}_api']['p50_ms']} / p95 {line[f'{key}_api']['p95_ms']} ms: "
            f"**{line['ratio_p50'][key]}×** p50, {line['ratio_p95'][key]}× p95"
            f"{_server_cpu(line, key)} (load {line.get('load_average_1m')}) | ≤ 1.5× | "
            f"{durability(line)} |"
            for op, key in (("read_preferences", "read"), ("recall_memory", "recall"))
        ]
    if bench == "export_import":
        big, small, growth = line["large"], line["small"], line["peak_rss_large_over_small"]
        return [
            f"| `memory export` / `import` at {big['records']:,} records "
            f"({big['bytes'] / 1e6:.0f} MB stream) | export {big['export']['seconds']} s, peak "
            f"RSS {big['export']['peak_rss_mib']} MiB; import {big['import']['seconds']} s, "
            f"{big['import']['peak_rss_mib']} MiB; ÷ {small['records']:,} records: RSS "
            f"{growth['export']}× / {growth['import']}×; byte-identical "
            f"**{line['byte_identical']}** | flat memory, identical bytes | {durability(line)} |"
        ]
    return [f"| {bench} | `{json.dumps(line)[:300]}` | — | {durability(line)} |"]


def _server_cpu(line: dict, key: str) -> str:
    """The worker's own CPU per call, where the bench could read it (``schedstat``)."""
    ratio = line.get("ratio_server_cpu_p50", {}).get(key)
    if ratio is None:
        return ""
    mcp, api = (line[f"{key}_{door}"]["server_cpu_p50_ms"] for door in ("mcp", "api"))
    return f"; server CPU p50 {mcp} vs {api} ms: **{ratio}×**"


def render(lines: list[dict]) -> str:
    out = [
        START,
        f"## Performance (generated by `make bench` on {dt.date.today().isoformat()}; "
        "raw lines in `bench/results.jsonl`)",
        "",
        "Every ratio is measured in one run, alternating the two sides call by call; "
        "`load` is the machine's 1-minute load average during the run (2 cores, shared).",
        "",
        "| what | result | target | durability |",
        "|---|---|---|---|",
    ]
    for line in lines:
        out.extend(row(line))
    out.append(END)
    return "\n".join(out)


def main() -> None:
    source, target = Path(sys.argv[1]), Path(sys.argv[2])
    lines = []
    for text in source.read_text().splitlines():
        text = text.strip()
        if text.startswith("{"):
            lines.append(json.loads(text))
    section = render(lines)
    current = target.read_text() if target.exists() else "# Measured results\n"
    if START in current and END in current:
        head, rest = current.split(START, 1)
        tail = rest.split(END, 1)[1]
        current = head + section + tail
    else:
        title, _, body = current.partition("\n")
        current = f"{title}\n\n{section}\n{body}"
    target.write_text(current)


if __name__ == "__main__":
    main()
