"""Scoring a policy on environments: a local model or an OpenAI-compatible chat endpoint.

Episodes run in an async vector environment of ``concurrency`` slots. With a chat endpoint, the
``concat_chat`` wrapper renders the conversation through :class:`MessagesTemplate`, so each
observation is the message list itself (as JSON) and the endpoint applies its own chat template;
the requests of one batch are in flight together, each bounded by ``timeout`` seconds.

Each episode is appended to ``episodes.jsonl`` as it ends (and, with ``trajectories``, written
as a Harbor trajectory in ``trajectories/``, see :mod:`gem_core.atif`). Progress shows as a bar on a terminal
and as plain lines otherwise (a log, a pipe). Ctrl-C or SIGTERM stops the evaluation and writes the
report of the episodes that finished (``"interrupted": true``).
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import re
import signal
import sys
import threading
import time
from contextlib import contextmanager
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from gem_core.episodes import Episode
from gem_core.errors import GemError
from gem_core.images import openai_message

from gem_trainer.config import vector_mode
from gem_trainer.metrics import episode_stats, save_figure

REPORT_FILE = "report.json"
EPISODES_FILE = "episodes.jsonl"
TRAJECTORIES_DIR = "trajectories"
PLOT_FILE = "report.png"


class EndpointError(GemError):
    """An OpenAI-compatible endpoint that cannot be used, with the fix in the message."""


@dataclass
class EvalSettings:
    """What ``gem eval`` scores, and how."""

    envs: list[str] = field(default_factory=lambda: ["game:GuessTheNumber-v0-easy"])
    model: str | None = None
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    episodes: int = 16
    concurrency: int = 8
    max_new_tokens: int = 256
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int = 0
    wrappers: str = "concat_chat"
    chat_template: str | None = None
    device: str = "auto"
    output_dir: str | None = None
    progress: bool = True
    timeout: float = 120.0  # seconds per endpoint request
    env_kwargs: dict[str, Any] = field(default_factory=dict)  # passed to every environment (--env-arg)
    ray_address: str | None = None  # play the environments on a Ray cluster (see gem_trainer.config.vector_mode)
    env_hosts: int | None = None
    trajectories: bool = False  # also write each episode as a Harbor trajectory (gem_core.atif)

    def validate(self) -> None:
        from gem_trainer.config import check_env_ids

        if self.env_hosts is not None and self.env_hosts < 1:
            raise GemError(f"--env-hosts must be at least 1, got {self.env_hosts}.")
        for name in ("episodes", "concurrency", "max_new_tokens"):
            if getattr(self, name) < 1:
                raise GemError(f"--{name.replace('_', '-')} must be at least 1, got {getattr(self, name)}.")
        if self.temperature < 0:
            raise GemError(f"--temperature must be >= 0 (0 is greedy), got {self.temperature}.")
        if not 0 < self.top_p <= 1:
            raise GemError(f"--top-p must be in (0, 1], got {self.top_p}.")
        if not self.timeout > 0:
            raise GemError(f"--timeout must be a positive number of seconds, got {self.timeout}.")
        if self.base_url is not None and not self.model:
            raise GemError("--base-url needs --model, the name of the model the endpoint serves.")
        check_env_ids(self.envs, "gem eval")


class MessagesTemplate:
    """Stands in for a tokenizer's chat template: renders the conversation as a JSON list of
    messages, which :class:`ChatEndpointPolicy` sends as they are (images as data-URL parts)."""

    def apply_chat_template(self, messages: Sequence[dict[str, str]], tokenize: bool = False,
                            add_generation_prompt: bool = True, **_: Any) -> str:
        return json.dumps([openai_message(m) for m in messages], ensure_ascii=False)


class ChatEndpointPolicy:
    """An async policy that asks an OpenAI-compatible ``/chat/completions`` endpoint for each
    action; observations are JSON message lists (see :class:`MessagesTemplate`)."""

    def __init__(self, base_url: str, model: str, *, api_key: str | None, max_tokens: int,
                 temperature: float, top_p: float, concurrency: int, timeout: float = 120.0,
                 max_retries: int = 2):
        try:
            import openai
        except ImportError:
            from gem_core.errors import MissingDependencyError

            raise MissingDependencyError("Evaluating through an OpenAI-compatible endpoint", "openai", "local") from None
        self._openai = openai
        self.base_url, self.model = base_url, model
        self._client_options = {"base_url": base_url, "api_key": api_key or "EMPTY", "max_retries": max_retries,
                                "timeout": timeout}
        self.timeout = timeout
        self._clients: dict[int, Any] = {}  # one client per event loop: connections belong to a loop
        self.options = {"max_tokens": max_tokens, "temperature": temperature, "top_p": top_p}
        self._limit = concurrency
        self.completion_tokens = 0
        self.requests = 0
        self.request_seconds = 0.0

    def _client(self) -> Any:
        loop = id(asyncio.get_running_loop())
        if loop not in self._clients:
            self._clients[loop] = self._openai.AsyncOpenAI(**self._client_options)
        return self._clients[loop]

    async def aclose(self) -> None:
        """Close the client of the running event loop."""
        client = self._clients.pop(id(asyncio.get_running_loop()), None)
        if client is not None:
            await client.close()

    async def check(self) -> None:
        """Fail early when the endpoint is unreachable, rejects the key, or lacks the model."""
        openai = self._openai
        try:
            listing = await self._client().with_options(max_retries=1, timeout=30).models.list()
        except openai.APIConnectionError as e:
            raise EndpointError(f"Cannot reach {self.base_url} ({e}). Is the server running, and is the URL "
                                "its OpenAI base (usually ending in /v1)?") from None
        except openai.AuthenticationError:
            raise EndpointError(f"{self.base_url} rejected the API key. Put the key in the environment "
                                "variable named by --api-key-env (default OPENAI_API_KEY).") from None
        except openai.APIStatusError:
            return  # some servers do not list models; the first request will tell
        names = [m.id for m in listing.data]
        if names and self.model not in names:
            raise EndpointError(f"{self.base_url} does not serve model {self.model!r}; it serves: "
                                f"{', '.join(names)}. Pass one of them with --model.")

    async def __call__(self, observations: list[str]) -> list[str]:
        semaphore = asyncio.Semaphore(self._limit)

        async def ask(observation: str) -> str:
            async with semaphore:
                return await self._complete(json.loads(observation))

        return list(await asyncio.gather(*(ask(o) for o in observations)))

    async def _complete(self, messages: list[dict[str, str]]) -> str:
        openai = self._openai
        started = time.perf_counter()
        try:
            response = await self._client().chat.completions.create(model=self.model, messages=messages, **self.options)
        except openai.AuthenticationError:
            raise EndpointError(f"{self.base_url} rejected the API key. Put the key in the environment "
                                "variable named by --api-key-env (default OPENAI_API_KEY).") from None
        except openai.APITimeoutError:
            raise EndpointError(
                f"A request to {self.base_url} got no answer within --timeout {self.timeout:g} s (after "
                "retries). A slow server needs a longer --timeout, or fewer tokens (--max-new-tokens) "
                "and requests (--concurrency) at once.") from None
        except openai.APIError as e:
            raise EndpointError(f"The request to {self.base_url} failed after retries: {e}") from None
        finally:
            self.request_seconds += time.perf_counter() - started
        self.requests += 1
        if response.usage is not None:
            self.completion_tokens += response.usage.completion_tokens or 0
        if not response.choices:
            raise EndpointError(f"{self.base_url} answered with no choices for model {self.model!r}.")
        return response.choices[0].message.content or ""


@dataclass
class EnvReport:
    env_id: str
    episodes: int
    mean_return: float
    return_stderr: float
    success_rate: float
    turns_per_episode: float
    format_error_rate: float
    seconds: float
    #: Slots taken out of service because their environment kept failing to reset (their reports).
    quarantined: list[dict[str, Any]] = field(default_factory=list)
    #: For games that end with ``info["outcome"]`` (e.g. ``-vs-bot`` ids): the share of episodes
    #: won, drawn and lost; None for other environments.
    outcomes: dict[str, float] | None = None


def summarise(env_id: str, episodes: Sequence[Episode], seconds: float) -> EnvReport:
    stats = episode_stats(episodes)
    returns = [e.total_reward for e in episodes]
    n = len(returns)
    var = sum((r - stats["mean_return"]) ** 2 for r in returns) / (n - 1) if n > 1 else 0.0
    ended = [e.turns[-1].info["outcome"] for e in episodes if e.turns and "outcome" in e.turns[-1].info]
    outcomes = {kind: ended.count(kind) / n for kind in ("win", "draw", "loss")} if ended else None
    return EnvReport(env_id, n, stats["mean_return"], math.sqrt(var / n) if n else 0.0,
                     stats["success_rate"], stats["turns_per_episode"], stats["format_error_rate"], seconds,
                     outcomes=outcomes)


def run_evaluation(settings: EvalSettings, *, console: Any = None) -> dict[str, Any]:
    """Play ``settings.episodes`` episodes of every environment; write and print the report."""
    import gem_core

    from gem_trainer.runtime import prefer_passive_openmp

    prefer_passive_openmp()
    settings.validate()
    policy, template, describe = _make_policy(settings)
    output = Path(settings.output_dir or Path("gem-runs") / datetime.now().strftime("eval-%Y%m%d-%H%M%S"))
    output.mkdir(parents=True, exist_ok=True)
    episodes_path = output / EPISODES_FILE
    episodes_path.write_text("")
    from gem_core.episodes import save_episodes

    reports: list[EnvReport] = []
    finished: list[Episode] = []  # the episodes of the environment being played, as they end
    bar = settings.progress and sys.stdout.isatty()
    lines = _ProgressLines(settings.episodes) if settings.progress and not bar else None
    interrupted = False
    env_id, started = settings.envs[0], time.perf_counter()

    def record(episode: Episode) -> None:
        save_episodes([episode], episodes_path, append=True)
        finished.append(episode)
        if settings.trajectories:
            _write_trajectory(episode, output / TRAJECTORIES_DIR, len(finished) - 1, settings.model)
        if lines is not None:
            lines.show(env_id, finished)

    with _interrupt_on_sigterm():
        try:
            for env_id in settings.envs:
                started = time.perf_counter()
                finished.clear()
                with gem_core.make_vec(env_id, num_envs=min(settings.concurrency, settings.episodes),
                                       wrappers=settings.wrappers, wrapper_options={"tokenizer": template},
                                       seed=settings.seed, **settings.env_kwargs,
                                       **vector_mode(settings.ray_address, settings.env_hosts)) as vec_env:
                    if isinstance(policy, ChatEndpointPolicy) and not reports:
                        vec_env.run_coroutine(policy.check())
                    try:
                        gem_core.collect_episodes(vec_env, policy, settings.episodes, seed=settings.seed,
                                                  progress=bar, on_episode=record)
                    finally:
                        if isinstance(policy, ChatEndpointPolicy):
                            vec_env.run_coroutine(policy.aclose())
                reports.append(summarise(env_id, finished, time.perf_counter() - started))
                reports[-1].quarantined = [{k: v for k, v in r.items() if k != "env_id"}
                                           for r in vec_env.quarantined.values()]
        except KeyboardInterrupt:
            interrupted = True
            if finished and (not reports or reports[-1].env_id != env_id):
                reports.append(summarise(env_id, finished, time.perf_counter() - started))
    report = {
        "policy": describe,
        "settings": {k: v for k, v in asdict(settings).items() if k not in ("progress",)},
        "environments": [asdict(r) for r in reports],
        "interrupted": interrupted,
    }
    (output / REPORT_FILE).write_text(json.dumps(report, indent=2))
    if reports:
        plot_report(reports, output / PLOT_FILE, title=describe)
    if console is not None:
        _print_report(console, reports, describe, output)
    if interrupted:
        done = sum(r.episodes for r in reports)
        raise GemError(f"Interrupted: {output / REPORT_FILE} reports the {done} episode(s) that finished.")
    return report


def _write_trajectory(episode: Episode, folder: Path, index: int, model: str | None) -> None:
    """Write ``episode`` as ``<env>-NNNN.json`` in ATIF, Harbor's trajectory format."""
    from gem_core.atif import write_trajectory

    name = re.sub(r"[^A-Za-z0-9._-]+", "_", episode.env_id)
    write_trajectory(episode, folder / f"{name}-{index:04d}.json", model_name=model)


class _ProgressLines:
    """Progress as plain lines, for output that is not a terminal: about ten per environment."""

    def __init__(self, total: int):
        self.total, self.every = total, max(1, total // 10)

    def show(self, env_id: str, finished: Sequence[Episode]) -> None:
        done = len(finished)
        if done % self.every == 0 or done == self.total:
            mean = sum(e.total_reward for e in finished) / done
            print(f"{env_id}: {done}/{self.total} episodes, mean return {mean:+.3f}", flush=True)


@contextmanager
def _interrupt_on_sigterm() -> Iterator[None]:
    """Within the block, SIGTERM interrupts the main thread as Ctrl-C does."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _make_policy(settings: EvalSettings) -> tuple[Any, Any, str]:
    if settings.base_url is not None:
        api_key = os.environ.get(settings.api_key_env)
        policy = ChatEndpointPolicy(
            settings.base_url, settings.model or "", api_key=api_key, max_tokens=settings.max_new_tokens,
            temperature=settings.temperature, top_p=settings.top_p, concurrency=settings.concurrency,
            timeout=settings.timeout,
        )
        return policy, MessagesTemplate(), f"{settings.model} at {settings.base_url}"
    from gem_trainer.models import (DEFAULT_MODEL, is_vision_language, load_model, load_processor,
                                           load_tokenizer, resolve_device, resolve_dtype, resolve_model,
                                           sampling_model)
    from gem_trainer.sampling import LocalPolicy, SamplingSettings

    folder = resolve_model(settings.model or DEFAULT_MODEL)
    processor = load_processor(folder, chat_template=settings.chat_template) if is_vision_language(folder) else None
    tokenizer = processor.tokenizer if processor else load_tokenizer(folder, chat_template=settings.chat_template)
    device = resolve_device(settings.device)
    model = load_model(folder, device=device, dtype=resolve_dtype("auto", device), trainable=False)
    policy = LocalPolicy(sampling_model(model), tokenizer, SamplingSettings(
        max_new_tokens=settings.max_new_tokens, temperature=settings.temperature, top_p=settings.top_p,
        batch_size=settings.concurrency,
    ), record=False, processor=processor)
    return policy, processor or tokenizer, str(settings.model or DEFAULT_MODEL)


def plot_report(reports: Sequence[EnvReport], path: Path, *, title: str = "") -> Path:
    """Success rate and mean return (with its standard error) per environment, as labelled
    horizontal bars: one row per environment, readable for one or for many."""
    import textwrap

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = range(len(reports))
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 1.7 + 0.6 * len(reports)), sharey=True)
    success = [r.success_rate for r in reports]
    left.barh(rows, success, color="tab:green", height=0.6)
    left.set_xlim(0, 1.15)
    left.set_title("success rate", fontsize=10)
    for row, value in zip(rows, success):
        left.annotate(f"{value:.0%}", (value, row), xytext=(3, 0), textcoords="offset points", va="center")
    means = [r.mean_return for r in reports]
    right.barh(rows, means, xerr=[r.return_stderr for r in reports], capsize=4, height=0.6)
    right.axvline(0, color="black", linewidth=0.8)
    right.set_title("mean return (± standard error)", fontsize=10)
    for row, report in zip(rows, reports):
        mean, side = report.mean_return + 0.0, 1 if report.mean_return >= 0 else -1  # + 0.0: no "-0.000"
        right.annotate(f"{mean:+.3f}", (mean + side * report.return_stderr, row), xytext=(4 * side, 0),
                       textcoords="offset points", va="center", ha="left" if side > 0 else "right")
    right.margins(x=0.25)
    left.set_yticks(list(rows), [f"{r.env_id}\n{r.episodes} episodes" for r in reports])
    left.invert_yaxis()
    for ax in (left, right):
        ax.grid(axis="x", alpha=0.3)
    return save_figure(fig, path, "\n".join(textwrap.wrap(title, 100)))


def _print_report(out: Any, reports: Sequence[EnvReport], describe: str, output: Path) -> None:
    from rich.table import Table

    table = Table(title=f"gem eval: {describe}")
    for column in ("environment", "episodes", "success", "mean return", "turns", "format errors"):
        table.add_column(column, justify="left" if column == "environment" else "right")
    for r in reports:
        table.add_row(r.env_id, str(r.episodes), f"{r.success_rate:.1%}",
                      f"{r.mean_return:+.3f} ± {r.return_stderr:.3f}", f"{r.turns_per_episode:.2f}",
                      f"{r.format_error_rate:.1%}")
    out.print(table)
    for r in reports:
        if r.outcomes is not None:
            out.print(f"{r.env_id}: win rate {r.outcomes['win']:.1%}, draws {r.outcomes['draw']:.1%}, "
                      f"losses {r.outcomes['loss']:.1%}")
        for q in r.quarantined:
            out.print(f"[yellow]{r.env_id}: slot {q['slot']} quarantined ({q['reason']}; seeds {q['seeds']}; "
                      f"last error: {q['errors'][-1]})[/]")
    out.print(f"Report: {output / REPORT_FILE}")
    out.print(f"Plot:   {output / PLOT_FILE}")
    out.print(f"Episodes: {output / EPISODES_FILE}")
