"""``gem play``: a person plays an environment in the terminal."""

from __future__ import annotations

from pathlib import Path

import click

COMMANDS_HELP = (
    "Type an action and press Enter. A line ending in a backslash continues on the next line.\n"
    "Commands: /random plays a random action, /reset starts a new episode, /quit leaves."
)


@click.command()
@click.argument("env_id")
@click.option("--seed", type=int, default=None, help="Seed of the first episode (later episodes continue its generator).")
@click.option("--image-dir", type=click.Path(file_okay=False), default=None,
              help="Folder for the PNG files of visual tasks' images (default: a new temporary folder).")
def play(env_id: str, seed: int | None, image_dir: str | None) -> None:
    """Play ENV_ID in the terminal: see observations, type actions, see rewards.

    Visual tasks (vision:*, math:Geometry3K) write each image as a PNG file and show its path
    where the observation says <image>.

    Example: gem play game:GuessTheNumber-v0-easy --seed 0
    """
    from rich.console import Console
    from rich.panel import Panel
    from rich.text import Text

    from gem_core.errors import GemError
    from gem_core.multiagent import MultiAgentEnv
    from gem_core.registry import make

    console = Console(highlight=False)
    env = make(env_id)
    if isinstance(env, MultiAgentEnv):
        env.close()
        raise GemError(f"{env_id} is a multi-agent environment: play one seat against its bots through the versus "
                       f"wrapper, or every seat through self_play (the built-in games: {env_id}-vs-bot, "
                       f"{env_id}-selfplay).")
    console.print(Text(COMMANDS_HELP, style="dim"))
    images = _ImageFiles(image_dir)
    episode = 0
    try:
        while True:
            episode += 1
            observation, info = env.reset(seed=seed if episode == 1 else None)
            shown = _shown(observation, info, images.save(info, f"episode{episode}-turn0"))
            console.print(Panel(shown, title=f"{env_id} - episode {episode}", title_align="left"))
            total, turns = 0.0, 0
            while True:
                action = _read_action(console)
                if action is None or action == "/quit":
                    return
                if action == "/reset":
                    break
                if action == "/random":
                    action = env.sample_random_action()
                    console.print(Text(f"random action: {action}", style="cyan"))
                observation, reward, terminated, truncated, info = env.step(action)
                turns += 1
                total += float(reward)
                done = terminated or truncated
                shown = _shown(observation, info, images.save(info, f"episode{episode}-turn{turns}"), done=done)
                console.print(Panel(shown, title=f"turn {turns}", title_align="left"))
                status = "terminated" if terminated else "truncated" if truncated else "continues"
                console.print(Text(f"reward {reward:+.3f} | return {total:+.3f} | {status}", style="bold"))
                details = {k: v for k, v in info.items() if k not in ("suffix", "images")}
                if details:
                    console.print(Text(f"info {details}", style="dim"))
                if done:
                    console.print(Text(_summary(turns, total, info), style="bold green"))
                    if _read_action(console) in (None, "/quit"):
                        return
                    break
    finally:
        env.close()


class _ImageFiles:
    """Writes the images of observations as PNG files into one folder."""

    def __init__(self, folder: str | None):
        self.folder = folder

    def save(self, info: dict, name: str) -> list[str]:
        from gem_core.images import images_of, png_bytes

        found = images_of(info)
        if not found:
            return []
        if self.folder is None:
            import tempfile

            self.folder = tempfile.mkdtemp(prefix="gem-play-")
        folder = Path(self.folder)
        folder.mkdir(parents=True, exist_ok=True)
        paths = []
        for number, image in enumerate(found, 1):
            path = folder / f"{name}-image{number}.png"
            path.write_bytes(png_bytes(image))
            paths.append(str(path))
        return paths


def _shown(observation: str, info: dict, image_paths: list[str] = (), *, done: bool = False):
    """The observation, with each ``<image>`` replaced by the path of its PNG file, followed by
    the state the environment puts in ``info["suffix"]`` (a board, a reminder of what to do)
    while the episode goes on, as observation wrappers show it to a model."""
    from rich.text import Text

    from gem_core.images import IMAGE

    pieces = observation.split(IMAGE) if image_paths else [observation]
    text = Text(pieces[0])
    for number, piece in enumerate(pieces[1:]):
        path = image_paths[number] if number < len(image_paths) else "(missing)"
        text.append(f"[image: {path}]", style="magenta")
        text.append(piece)
    suffix = info.get("suffix")
    if isinstance(suffix, str) and suffix and not done:
        text.append("\n" + suffix, style="cyan")
    return text


def _summary(turns: int, total: float, info: dict) -> str:
    """What the episode came to, and what its return means."""
    outcome = ""
    if "success" in info:
        outcome = " (solved)" if info["success"] else " (not solved)"
    text = f"Episode over after {turns} turns{outcome} with return {total:+.3f}."
    if info.get("success") is False and total > 0:
        text += (" A game not solved can still earn partial credit for getting close; docs/envs.md "
                 "gives each environment's rewards.")
    return text + " Press Enter for a new episode, or /quit."


def _read_action(console) -> str | None:
    """One action from the terminal, joining lines that end in a backslash; None at end of input.
    When input is piped, each prompt is a line of its own."""
    import sys

    lines: list[str] = []
    prompt = "action> "
    piped = not sys.stdin.isatty()
    while True:
        try:
            if piped:
                console.print(prompt)
            line = input() if piped else console.input(prompt)
        except EOFError:
            return None if not lines else "\n".join(lines)
        if line.endswith("\\") and not line.endswith("\\\\"):
            lines.append(line[:-1])
            prompt = "......> "
            continue
        lines.append(line)
        return "\n".join(lines)
