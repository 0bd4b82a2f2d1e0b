"""``gem plugins``: what each plugin registered, and what failed."""

from __future__ import annotations

import json

import click

from gem_core.cli import output


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.option("-v", "--verbose", is_flag=True, help="List every registered name, not just counts.")
def plugins(as_json: bool, verbose: bool) -> None:
    """Show each plugin, what it registered and its failures.

    Plugins come from the `gem` entry-point group. Set GEM_PLUGINS=none (or a comma list of
    names) to limit which ones load.
    """
    from gem_core.plugins import plugin_reports

    reports = plugin_reports()
    if as_json:
        click.echo(json.dumps(
            [{"name": r.name, "origin": r.origin, "ok": r.ok, "registered": r.registered,
              "errors": r.errors} for r in reports],
            indent=2,
        ))
        return
    from rich.table import Table
    from rich.text import Text

    table = Table(header_style="bold")
    for column in ("plugin", "origin", "registered", "status"):
        table.add_column(column, overflow="fold")
    for r in reports:
        if verbose:
            registered = "\n".join(f"{kind}: {', '.join(names)}" for kind, names in r.registered.items() if names)
        else:
            registered = ", ".join(_count(len(names), kind) for kind, names in r.registered.items() if names)
        status = Text("ok", style="green") if r.ok else Text("\n".join(r.errors), style="red")
        table.add_row(r.name, r.origin, registered or "-", status)
    output.console().print(table)


def _count(number: int, kinds: str) -> str:
    """``"3 envs"``, ``"1 env"``: the kind's name is plural, as the registries are named."""
    return f"{number} {kinds[:-1] if number == 1 and kinds.endswith('s') else kinds}"
