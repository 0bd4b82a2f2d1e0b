"""``gem envs``: list registered environments."""

from __future__ import annotations

import json

import click

from gem_core.cli import output


@click.command()
@click.argument("pattern", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list of objects instead of a table.")
def envs(pattern: str | None, as_json: bool) -> None:
    """List registered environments, optionally filtered by PATTERN.

    PATTERN is a glob (`game:*-easy`) or a case-insensitive substring of the id (`sudoku`).
    The `offline` column says whether the environment works without downloading data, or which
    extra it needs installed first (`needs [envs]`: pip install -e ".[envs]").
    """
    from gem_core.registry import list_envs

    specs = list_envs(pattern)
    if as_json:
        rows = [
            {
                "id": s.id,
                "category": s.category,
                "entry_point": s.entry_point_name,
                "description": s.description,
                "offline": s.offline,
                "missing_extras": s.missing_extras,
                "source": s.source,
            }
            for s in specs
        ]
        click.echo(json.dumps(rows, indent=2))
        return
    from rich.table import Table

    console = output.console()
    if not specs:
        console.print(f"No environment matches {pattern!r}." if pattern else "No environments registered.")
        return
    table = Table(show_lines=False, header_style="bold")
    table.add_column("id", no_wrap=True)
    table.add_column("category")
    table.add_column("offline")
    table.add_column("entry point", overflow="fold", max_width=48)
    table.add_column("description", overflow="fold")
    missing: set[str] = set()
    for s in specs:
        extras = s.missing_extras
        missing.update(extras)
        available = "yes" if s.offline else "download"
        if extras:
            available = "[yellow]needs " + " ".join(f"\\[{extra}]" for extra in extras) + "[/]"
        table.add_row(s.id, s.category, available, s.entry_point_name, s.description)
    console.print(table)
    console.print(f"{len(specs)} environment{'s' if len(specs) != 1 else ''}.")
    if missing:
        extras = ",".join(sorted(missing))
        console.print(f"Environments marked 'needs' cannot be made until their extras are installed: "
                      f'pip install -e ".[{extras}]" (from GEM\'s clone).', markup=False)
