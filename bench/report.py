"""The results as people read them: a table in the terminal and the same table in Markdown."""

from __future__ import annotations

from pathlib import Path

from rich.table import Table

from bench import reference
from bench.machine import summary_line
from bench.results import WorkloadSummary

STATUS_STYLE = {"ok": "green", "ours only": "cyan", "failed": "red", "skipped": "dim"}


def format_value(value: float | None, unit: str = "") -> str:
    if value is None:
        return "-"
    if abs(value) >= 1000:
        text = f"{value:,.0f}"
    elif abs(value) >= 100:
        text = f"{value:.1f}"
    else:
        text = f"{value:.3g}"
    return f"{text} {unit}".strip()


def format_speedup(speedup: float | None) -> str:
    if speedup is None:
        return "-"
    return f"{speedup:.1f}x" if speedup >= 10 else f"{speedup:.2f}x"


def rows(summaries: list[WorkloadSummary]) -> list[dict]:
    """One row per metric, and one for each workload without metrics."""
    table = []
    for s in summaries:
        for m in s.metrics:
            table.append({
                "workload": s.name, "metric": m.name, "status": s.status, "note": s.note,
                "ours": format_value(m.ours_median, m.unit),
                "reference": format_value(m.reference_median, m.unit),
                "ratio": format_value(m.ratio), "speedup": m.speedup,
            })
        if not s.metrics:
            table.append({"workload": s.name, "metric": "", "status": s.status, "note": s.note,
                          "ours": "-", "reference": "-", "ratio": "-", "speedup": None})
    return table


def terminal_table(summaries: list[WorkloadSummary], *, title: str) -> Table:
    table = Table(title=title, title_justify="left")
    for header, justify in [("workload", "left"), ("metric", "left"), ("ours", "right"),
                            (reference.LABEL, "right"), ("ours/ref", "right"), ("speedup", "right"),
                            ("status", "left")]:
        table.add_column(header, justify=justify)
    for row in rows(summaries):
        speedup = row["speedup"]
        style = "" if speedup is None else "green" if speedup > 1.05 else "red" if speedup < 0.95 else ""
        status = f"[{STATUS_STYLE[row['status']]}]{row['status']}[/]"
        if row["note"]:
            status += f"[dim]: {row['note']}[/]"
        table.add_row(row["workload"], row["metric"], row["ours"], row["reference"], row["ratio"],
                      f"[{style}]{format_speedup(speedup)}[/]" if style else format_speedup(speedup), status)
    return table


def write_markdown(path: Path, summaries: list[WorkloadSummary], *, machine: dict, command: str) -> None:
    """The table as Markdown, headed by the date and machine, ready to paste into docs/benchmarks.md."""
    lines = [
        f"Measured {machine['date'][:10]} on {summary_line(machine)} with `{command}`; "
        f"speedup above 1x means ours is better.",
        "",
        f"| workload | metric | ours | {reference.LABEL} | speedup | note |",
        "| --- | --- | ---: | ---: | ---: | --- |",
    ]
    for row in rows(summaries):
        note = row["status"] if row["status"] != "ok" else ""
        if row["note"]:
            note = f"{note}: {row['note']}"
        lines.append(f"| {row['workload']} | {row['metric']} | {row['ours']} | {row['reference']} | "
                     f"{format_speedup(row['speedup'])} | {note.replace('|', '/')} |")
    path.write_text("\n".join(lines) + "\n")
