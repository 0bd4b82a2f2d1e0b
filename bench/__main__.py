"""``python -m bench``: run the workloads with this project and with the reference, side by side."""

from __future__ import annotations

import argparse
import importlib.util
import shlex
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from bench import BenchError, machine, reference
from bench.discovery import ON_REQUEST, PLANNED, discover, select
from bench.plot import write_speedup_chart
from bench.report import terminal_table, write_markdown
from bench.results import WorkloadSummary, summarise, write_csv, write_json
from bench.runner import run_workload

DEFAULT_OUT = Path(__file__).resolve().parent / "results"
OUTPUT_FILES = {"json": "results.json", "csv": "results.csv", "markdown": "table.md", "chart": "speedups.png"}


def positive(kind: type):
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"{text!r} must be above 0")
        return value
    return parse


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description=(
            f"Run each workload script in bench/workloads/ with this project and with the reference ({reference.LABEL}), alternating the two, and report "
            "per metric the medians, the ratio ours/reference and the speedup (above 1x: ours is better)."
        ),
        epilog=(
            f"Workloads: {', '.join(PLANNED)} (planned ones not written yet are listed as skipped); "
            f"{', '.join(ON_REQUEST)} only when --only names it. "
            f"The reference runs in a virtual environment created on first use in {reference.venv_dir()}. "
            f"Writes {', '.join(OUTPUT_FILES.values())} under --out."
        ),
    )
    parser.add_argument("--quick", action="store_true",
                        help="short workload runs and one repeat, meant to finish in under 2 minutes")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="run only these workloads")
    parser.add_argument("--repeats", type=positive(int), metavar="N",
                        help="runs of each workload per implementation (default 3; 1 with --quick)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, metavar="DIR",
                        help="folder for the results (default: bench/results/)")
    parser.add_argument("--no-reference", action="store_true", help="run this project only")
    parser.add_argument("--reference-python", type=Path, metavar="PATH",
                        help=f"an interpreter that has {reference.DISTRIBUTION} installed, instead of the cached one")
    parser.add_argument("--timeout", type=positive(float), default=600.0, metavar="SECONDS",
                        help="limit on one run of one workload (default 600)")
    args = parser.parse_args(argv)
    if args.no_reference and args.reference_python:
        parser.error("--no-reference and --reference-python contradict each other; give one")
    args.repeats = args.repeats or (1 if args.quick else 3)
    return args


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    messages = Console(stderr=True, soft_wrap=True)  # messages stay whole lines when piped
    try:
        return run(args, command=shlex.join(["python", "-m", "bench", *argv]), messages=messages)
    except BenchError as e:
        messages.print(f"[red]error:[/] {e}", highlight=False)
        return 2
    except KeyboardInterrupt:
        messages.print("Interrupted; no results written.")
        return 130


def run(args: argparse.Namespace, *, command: str, messages: Console) -> int:
    if importlib.util.find_spec("matplotlib") is None:
        raise BenchError("The speedup chart needs matplotlib. Install it with: pip install -e '.[dev]'")
    try:  # before measuring for minutes
        args.out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise BenchError(f"Cannot write results to {args.out} ({e.strerror}); choose another folder with --out.") from None
    workloads = select(discover(), args.only)
    runnable = [w for w in workloads if w.runs]
    interpreters = {"ours": Path(sys.executable)}
    if not args.no_reference and runnable:
        interpreters["reference"] = (
            reference.check_interpreter(args.reference_python) if args.reference_python
            else reference.ensure_reference(messages)
        )
    facts = machine.describe(interpreters)
    started = time.perf_counter()  # the measuring, not the one-off creation of the reference

    summaries: list[WorkloadSummary] = []
    columns = [SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()]
    with Progress(*columns, console=messages, transient=True) as progress:
        task = progress.add_task("starting", total=len(runnable) * args.repeats * len(interpreters))

        def on_step(description: str, advance: int) -> None:
            progress.update(task, advance=advance, **({"description": description} if description else {}))

        for workload in workloads:
            runs = [] if not workload.runs else run_workload(
                workload, interpreters, repeats=args.repeats, quick=args.quick, timeout=args.timeout, on_step=on_step)
            summaries.append(summarise(workload, runs, reference_run="reference" in interpreters))

    elapsed = time.perf_counter() - started
    settings = {
        "command": command, "quick": args.quick, "repeats": args.repeats, "only": args.only,
        "timeout_s": args.timeout, "elapsed_s": round(elapsed, 2),
        "reference": reference.LABEL if "reference" in interpreters else None,
        "interpreters": {impl: str(path) for impl, path in interpreters.items()},
    }
    paths = {kind: args.out / name for kind, name in OUTPUT_FILES.items()}
    write_json(paths["json"], summaries, machine=facts, settings=settings)
    write_csv(paths["csv"], summaries)
    write_markdown(paths["markdown"], summaries, machine=facts, command=command)
    write_speedup_chart(paths["chart"], summaries, machine=facts)

    from gem_core.cli.output import console

    console().print(terminal_table(summaries, title=f"{facts['date'][:10]} · {machine.summary_line(facts)}"))
    messages.print(f"Finished in {elapsed:.0f} s. Results: " + ", ".join(str(p) for p in paths.values()),
                   highlight=False)
    failed = [s.name for s in summaries if s.status == "failed"]
    if failed:
        messages.print(f"[red]Failed: {', '.join(failed)}[/] (see the status column and {paths['json']}).",
                       highlight=False)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
