"""Terminal output shared by the subcommands."""

from __future__ import annotations


def console():
    """A rich console; when output goes to a pipe or file, lines are not wrapped at 80 columns."""
    from rich.console import Console

    probe = Console()
    return probe if probe.is_terminal else Console(width=200, highlight=False)
