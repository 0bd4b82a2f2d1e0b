"""The ``gem`` command.

Subcommands are imported only when run, so ``gem --help`` stays fast. Plugins add their own
subcommands through the ``gem_register_commands`` hook: the serving wing ``gem serve``, the
built-in trainer ``gem train``, ``gem eval`` and ``gem view``, and each adapter ``gem <lib>``.
"""

from __future__ import annotations

import sys

import click

from gem_core.errors import GemError

# name -> ("module:command", one-line help)
BUILTIN_COMMANDS: dict[str, tuple[str, str]] = {
    "check": ("gem_core.cli.check:check", "Check an environment against GEM's environment contract."),
    "envs": ("gem_core.cli.envs:envs", "List registered environments."),
    "play": ("gem_core.cli.play:play", "Play an environment in the terminal."),
    "plugins": ("gem_core.cli.plugins:plugins", "Show each plugin, what it registered and its failures."),
    "search-server": ("gem_core.cli.search_server:search_server", "Serve BM25 search over a corpus for the search tool."),
}


class LazyGroup(click.Group):
    """A group whose subcommands are imported on use: the built-in ones and those plugins register."""

    def _table(self) -> dict[str, tuple[str, str]]:
        from gem_core.registry import COMMANDS

        table = {c.name: (c.target, c.description) for c in COMMANDS.components()}
        table.update(BUILTIN_COMMANDS)
        return table

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(self._table())

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        entry = self._table().get(name)
        if entry is None:
            return None
        target = entry[0]
        if isinstance(target, click.Command):
            return target
        from gem_core.registry import load_object

        return load_object(target, what=f"the `gem {name}` command")

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, help_text) for name, (_, help_text) in sorted(self._table().items())]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def resolve_command(self, ctx, args):
        try:
            return super().resolve_command(ctx, args)
        except click.UsageError as e:
            from gem_core.errors import closest_names

            if args and "No such command" in str(e):
                close = closest_names(args[0], self._table())
                if close:
                    raise click.UsageError(f"{e.message} Did you mean: {', '.join(close)}?", ctx) from None
            raise

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except GemError as e:
            raise click.ClickException(str(e)) from None


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="gem-adapters", prog_name="gem")
def cli() -> None:
    """GEM: a gym for agentic LLMs.

    List environments with `gem envs`, try one with `gem play ENV_ID`, and see which plugins
    loaded with `gem plugins`.
    """


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``gem`` console script."""
    try:
        cli.main(args=argv, prog_name="gem")
    except KeyboardInterrupt:
        sys.exit(130)
