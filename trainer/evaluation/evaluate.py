"""Scoring a policy on environments: a local model or an OpenAI-compatible chat endpoint.

Episodes run in an async vector environment of ``concurrency`` slots. With a chat endpoint, the
``concat_chat`` wrapper renders the conversation through :class:`MessagesTemplate`, so each
observation is the message list itself (as JSON) and the endpoint applies its own chat template;
the requests of one batch are in flight together, each bounded by ``timeout`` seconds.

Every environment plays ``episodes`` starts (seeds ``seed``, ``seed + 1``, ...), each ``samples``
times, whatever slot plays them. Each turn is sampled with a seed of its own, drawn from the run's
seed, the environment, the start, the sample and the turn (a local model draws it from a generator
of its own; an endpoint gets it as the request's ``seed``), so an episode does not depend on what
else was in its batch. A `gem train` checkpoint is played with the settings it trained with
(:data:`gem_trainer.training.checkpoint.ACTING_SETTINGS`) unless told otherwise.

The folder (:mod:`gem_trainer.evaluation.folder`) gets the settings first, then each episode as it
ends (and, with ``trajectories``, as a Harbor trajectory in ``trajectories/``, see
:mod:`gem_core.atif`). Progress shows as a bar on a terminal and as plain lines otherwise. Ctrl-C
or SIGTERM stops the evaluation and writes the report of the episodes that finished
(``"interrupted": true``); ``resume=True`` (``gem eval --resume DIR``) plays the rest.

An episode that failed (its environment raised, returned something malformed, timed out, ...:
not the agent's doing) is recorded and reported apart, by kind; the scores are taken over the
valid episodes, and a resume plays the failed ones again.
"""

from __future__ import annotations

import asyncio
import copy
import json
import re
import signal
import sys
import threading
import time
import zlib
from collections import Counter
from contextlib import contextmanager
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, fields, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from gem_core.endpoint import REFUSED, TIMEOUT, ChatEndpoint, EndpointError  # noqa: F401 (EndpointError: gem eval's failures)
from gem_core.episodes import Episode
from gem_core.errors import GemError, option_of, require_at_least_one
from gem_core.images import openai_message

from gem_trainer.config import vector_mode
from gem_trainer.evaluation import folder as eval_folder
from gem_trainer.evaluation.folder import EPISODES_FILE, PLOT_FILE, REPORT_FILE, Planned
from gem_trainer.evaluation.scores import EnvReport, summarise
from gem_trainer.metrics import percent, save_figure
from gem_trainer.trackers import RunInfo, Trackers, check_installed, parse_report_to

#: What `gem eval` plays when neither the caller nor a checkpoint says otherwise.
DEFAULTS: dict[str, Any] = {
    "envs": ["game:GuessTheNumber-v0-easy"], "api_key_env": "OPENAI_API_KEY", "episodes": 16, "samples": 1,
    "concurrency": 8, "max_new_tokens": 256, "temperature": 0.0, "top_p": 1.0, "seed": 0,
    "wrappers": "concat_chat", "device": "auto", "timeout": 120.0, "env_kwargs": {}, "trajectories": False,
    "report_to": [],
}
#: Settings that change how an evaluation runs, not which episodes it plays: a resume may change them.
RUNNING = ("api_key_env", "concurrency", "device", "output_dir", "progress", "timeout", "ray_address", "env_hosts",
           "report_to")
#: The option of each setting whose name is not the field's with dashes.
_OPTION = {"envs": "--env", "env_kwargs": "--env-arg"}
TRAJECTORIES_DIR = "trajectories"
#: What the flags of `gem eval` change when a request to an endpoint fails that way.
ENDPOINT_HINTS = {TIMEOUT: "Raise --timeout, or ask for fewer tokens (--max-new-tokens) and requests "
                           "(--concurrency) at once.",
                  REFUSED: "--model names the served model, --api-key-env the variable that holds the key."}


@dataclass
class EvalSettings:
    """What ``gem eval`` scores, and how. A field left None takes, in order: the resumed
    evaluation's value (``resume=True``), the checkpoint's training setting (``model`` a `gem
    train` checkpoint: :data:`~gem_trainer.training.checkpoint.ACTING_SETTINGS`), :data:`DEFAULTS`."""

    envs: list[str] | None = None
    model: str | None = None  # a local model folder or "smollm2"; with base_url, the served model's name
    base_url: str | None = None
    api_key_env: str | None = None
    episodes: int | None = None  # starts (seeds) per environment
    samples: int | None = None  # episodes per start
    concurrency: int | None = None
    max_new_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    seed: int | None = None
    wrappers: str | None = None
    chat_template: str | None = None
    device: str | None = None
    output_dir: str | None = None
    progress: bool = True
    timeout: float | None = None  # seconds per endpoint request
    env_kwargs: dict[str, Any] | None = None  # passed to every environment (--env-arg)
    ray_address: str | None = None  # play the environments on a Ray cluster (see gem_trainer.config.vector_mode)
    env_hosts: int | None = None
    trajectories: bool | None = None  # also write each episode as a Harbor trajectory (gem_core.atif)
    report_to: str | list[str] | None = None  # experiment trackers (gem_trainer.trackers): "wandb,mlflow", a list, "none"

    def validate(self) -> None:
        """Check resolved settings (see :func:`resolve_settings`)."""
        from gem_trainer.config import check_env_ids

        require_at_least_one(self, ("episodes", "samples", "concurrency", "max_new_tokens"))
        if self.env_hosts is not None:
            require_at_least_one(self, ("env_hosts",))
        if self.seed < 0:
            raise GemError(f"--seed must be 0 or more, got {self.seed}.")
        if self.temperature < 0:
            raise GemError(f"--temperature must be >= 0 (0 is greedy), got {self.temperature}.")
        if not 0 < self.top_p <= 1:
            raise GemError(f"--top-p must be in (0, 1], got {self.top_p}.")
        if not self.timeout > 0:
            raise GemError(f"--timeout must be a positive number of seconds, got {self.timeout}.")
        if self.base_url is not None and not self.model:
            raise GemError("--base-url needs --model, the name of the model the endpoint serves.")
        check_env_ids(self.envs, "gem eval")
        check_installed(parse_report_to(self.report_to))


def resolve_settings(settings: EvalSettings, *, resume: bool = False) -> tuple[EvalSettings, dict[str, str]]:
    """``settings`` with every None filled in, and where each value came from: "given",
    "checkpoint" (the model folder's training settings) or "default". With ``resume``, the
    evaluation in ``settings.output_dir`` brings its own settings and sources; a given setting
    that would change its episodes is refused."""
    given = {f.name: getattr(settings, f.name) for f in fields(settings) if getattr(settings, f.name) is not None}
    if resume:
        if settings.output_dir is None:
            raise GemError("Name the folder of the evaluation to continue (--resume DIR).")
        saved, sources = eval_folder.read_settings(Path(settings.output_dir))
        changed = [name for name, value in given.items() if name not in RUNNING and saved.get(name) != value]
        if changed:
            what = ", ".join(f"{option_of(n, _OPTION)} {given[n]!r} (it played {saved.get(n)!r})" for n in changed)
            raise GemError(f"{settings.output_dir} cannot be resumed with other settings: {what}. A resume plays "
                           "the rest of the evaluation as it started; leave these out, or start a new evaluation "
                           "with another --output-dir.")
        known = {f.name for f in fields(EvalSettings)}
        return EvalSettings(**{**{k: v for k, v in saved.items() if k in known}, **given}), sources
    from gem_trainer.training.checkpoint import trained_with

    trained = trained_with(Path(settings.model)) if settings.model and settings.base_url is None else {}
    values, sources = {}, {}
    for name, default in DEFAULTS.items():
        source = "given" if name in given else "checkpoint" if name in trained else "default"
        values[name] = copy.deepcopy(given.get(name, trained.get(name, default)))
        sources[name] = source
    if settings.base_url is None and settings.model is None:
        from gem_trainer.models import DEFAULT_MODEL

        values["model"] = DEFAULT_MODEL
    return replace(settings, **values), sources


def trained_settings_note(settings: EvalSettings, sources: dict[str, str]) -> str | None:
    """A sentence naming the settings that came from the checkpoint's training run (None when none did)."""
    from gem_trainer.training.checkpoint import TRAINED_WITH

    taken = [name for name, source in sources.items() if source == "checkpoint"]
    if not taken:
        return None
    values = ", ".join(f"{name} {getattr(settings, name)!r}" for name in taken)
    return (f"Playing the checkpoint as it trained ({settings.model}/{TRAINED_WITH}): {values}. "
            "Flags override them.")


class MessagesTemplate:
    """Stands in for a tokenizer's chat template: renders the conversation as a JSON list of
    messages, which :class:`ChatEndpointPolicy` sends as they are (images as data-URL parts)."""

    def apply_chat_template(self, messages: Sequence[dict[str, str]], tokenize: bool = False,
                            add_generation_prompt: bool = True, **_: Any) -> str:
        return json.dumps([openai_message(m) for m in messages], ensure_ascii=False)


class ChatEndpointPolicy:
    """An async policy that asks a chat model at an OpenAI-compatible endpoint
    (:class:`~gem_core.endpoint.ChatEndpoint`) for each action, ``concurrency`` requests at a time;
    observations are JSON message lists (see :class:`MessagesTemplate`)."""

    def __init__(self, endpoint: ChatEndpoint, *, top_p: float, concurrency: int):
        self.endpoint, self.top_p, self._limit = endpoint, top_p, concurrency

    async def check(self) -> None:
        """Fail early when the endpoint is unreachable, rejects the key, or lacks the model."""
        await self.endpoint.acheck()

    async def aclose(self) -> None:
        """Close the client of the running event loop."""
        await self.endpoint.aclose()

    async def __call__(self, observations: list[str], infos: list[dict[str, Any]] | None = None,
                       seeds: list[int] | None = None) -> list[str]:
        """An action per observation (``infos`` are not needed: images travel in the messages);
        ``seeds`` go with the requests as their ``seed`` when sampling (temperature above 0)."""
        semaphore = asyncio.Semaphore(self._limit)
        if seeds is None or self.endpoint.temperature <= 0:
            seeds = [None] * len(observations)  # type: ignore[list-item]

        async def ask(observation: str, seed: int | None) -> str:
            options = {"top_p": self.top_p} if seed is None else {"top_p": self.top_p, "seed": seed}
            async with semaphore:
                return await self.endpoint.acomplete(json.loads(observation), **options)

        return list(await asyncio.gather(*(ask(o, s) for o, s in zip(observations, seeds))))


def run_evaluation(settings: EvalSettings, *, console: Any = None, resume: bool = False) -> dict[str, Any]:
    """Play every environment's ``episodes`` starts ``samples`` times each; write and print the
    report. ``resume``: continue the evaluation in ``settings.output_dir`` (its settings, and the
    episodes it has not finished)."""
    from gem_trainer.runtime import prefer_passive_openmp

    prefer_passive_openmp()
    settings, sources = resolve_settings(settings, resume=resume)
    settings.validate()
    output = Path(settings.output_dir or Path("gem-runs") / datetime.now().strftime("eval-%Y%m%d-%H%M%S"))
    settings.output_dir = str(output)
    episodes_path = output / EPISODES_FILE
    if resume:
        eval_folder.drop_unfinished_line(episodes_path)
        done = eval_folder.read_episodes(episodes_path)
    elif episodes_path.exists() and episodes_path.stat().st_size:
        raise GemError(f"{output} already holds an evaluation: continue it with --resume {output}, or choose "
                       "another --output-dir.")
    else:
        done = []
    todo = eval_folder.left_to_play(eval_folder.plan(settings.envs, settings.seed, settings.episodes,
                                                     settings.samples), done)
    current, replayed = eval_folder.latest(done), set(todo)
    kept = [e for e, sample in current if (e.env_id, e.seed, sample) not in replayed]  # a failed one plays again
    note = trained_settings_note(settings, sources)
    if console is not None and note:
        console.print(note)
    if console is not None and resume:
        again = len(current) - len(kept)
        console.print(f"Resuming {output}: {len(kept)} episode(s) played, {len(todo)} to play"
                      + (f" ({again} of them failed before: they are played again)." if again else "."))
    policy, template, describe = _make_policy(settings) if todo else (None, None, _describe(settings))
    output.mkdir(parents=True, exist_ok=True)
    if not resume:
        episodes_path.write_text("")
        eval_folder.write_settings(output, _recorded(settings), sources)
    trackers = Trackers.open(parse_report_to(settings.report_to), RunInfo(output, "eval", _recorded(settings), resumed=resume),
                             say=print if console is None else lambda message: console.print(message, markup=False))
    try:
        reports, interrupted = _play(settings, policy, template, todo, kept, episodes_path,
                                     recorded=Counter(e.env_id for e, _ in done))
        report = {
            "policy": describe,
            "settings": _recorded(settings),
            "settings_from": sources,
            "environments": [asdict(r) for r in reports],
            "interrupted": interrupted,
        }
        (output / REPORT_FILE).write_text(json.dumps(report, indent=2))
        plot = plot_report(reports, output / PLOT_FILE, title=describe) if reports else None
        trackers.log_report(report, plot)
    finally:
        trackers.finish()
    if console is not None:
        _print_report(console, reports, describe, output)
    if interrupted:
        count = sum(r.episodes + r.failed for r in reports)
        raise GemError(f"Interrupted: {output / REPORT_FILE} reports the {count} episode(s) that finished; "
                       f"`gem eval --resume {output}` plays the rest.")
    return report


def _play(settings: EvalSettings, policy: Any, template: Any, todo: list[Planned], done: list[Episode],
          episodes_path: Path, *, recorded: dict[str, int] | None = None) -> tuple[list[EnvReport], bool]:
    """Play the ``todo`` episodes environment by environment, appending each to ``episodes_path``
    (which holds ``recorded`` episodes of each environment already) as it ends; return every
    environment's report (``done`` episodes included) and whether Ctrl-C or SIGTERM cut the
    evaluation short."""
    import gem_core

    reports: list[EnvReport] = []
    recorded = recorded or {}
    finished: list[Episode] = []  # the episodes of the environment being played, as they end
    bar = settings.progress and sys.stdout.isatty()
    total = settings.episodes * settings.samples
    lines = _ProgressLines(total) if settings.progress and not bar else None
    env_id, started, earlier = settings.envs[0], time.perf_counter(), []
    checked = False
    with _interrupt_on_sigterm():
        try:
            for env_id in settings.envs:
                started = time.perf_counter()
                earlier = [e for e in done if e.env_id == env_id]
                finished = []
                playing = [item for item in todo if item[0] == env_id]
                if not playing:
                    reports.append(summarise(env_id, earlier, 0.0))
                    continue
                sampler = TurnSeeds(policy, env_id, settings.seed, playing, settings.samples)

                def record(episode: Episode) -> None:
                    eval_folder.append_episode(episodes_path, episode, sampler.finish(episode))
                    finished.append(episode)
                    if settings.trajectories:  # numbered as they end, a resumed run's after the earlier ones
                        _write_trajectory(episode, episodes_path.parent / TRAJECTORIES_DIR,
                                          recorded.get(env_id, 0) + len(finished) - 1, settings.model)
                    if lines is not None:
                        lines.show(env_id, earlier + finished)

                with gem_core.make_vec(env_id, num_envs=min(settings.concurrency, len(playing)),
                                       wrappers=settings.wrappers, wrapper_options={"tokenizer": template},
                                       seed=settings.seed, **settings.env_kwargs,
                                       **vector_mode(settings.ray_address, settings.env_hosts)) as vec_env:
                    if isinstance(policy, ChatEndpointPolicy) and not checked:
                        vec_env.run_coroutine(policy.check())
                        checked = True
                    try:
                        gem_core.collect_episodes(vec_env, sampler, len(playing), seed=[s for _, s, _ in playing],
                                                  progress=bar, on_episode=record)
                    finally:
                        if isinstance(policy, ChatEndpointPolicy):
                            vec_env.run_coroutine(policy.aclose())
                reports.append(summarise(env_id, earlier + finished, time.perf_counter() - started))
                reports[-1].quarantined = [{k: v for k, v in r.items() if k != "env_id"}
                                           for r in vec_env.quarantined.values()]
        except KeyboardInterrupt:
            if (earlier or finished) and (not reports or reports[-1].env_id != env_id):
                reports.append(summarise(env_id, earlier + finished, time.perf_counter() - started))
            return reports, True
    return reports, False


class TurnSeeds:
    """A policy for one environment's planned episodes: it tells each new episode which sample
    of its start it is (the start's next unplayed one), and asks ``policy`` for actions with a
    sampling seed per turn (see :func:`turn_seed`)."""

    def __init__(self, policy: Any, env_id: str, run_seed: int, planned: Sequence[Planned], samples: int):
        self.policy, self.env_id, self.run_seed, self.samples = policy, env_id, run_seed, samples
        self._unplayed: dict[int, list[int]] = {}
        for _, seed, sample in planned:
            self._unplayed.setdefault(seed, []).append(sample)
        self._playing: dict[int, tuple[Episode, int]] = {}  # id of a running episode -> (it, its sample)
        self._extra: dict[int, int] = {}  # samples of unplanned seeds (a failed start's replacement)

    def sample_of(self, episode: Episode) -> int:
        """Which sample of its start ``episode`` is (decided when it is first seen)."""
        key = id(episode)
        if key not in self._playing:
            unplayed = self._unplayed.get(episode.seed)  # type: ignore[arg-type]
            if unplayed:
                sample = unplayed.pop(0)
            else:
                sample = self._extra.setdefault(episode.seed, self.samples)  # type: ignore[arg-type]
                self._extra[episode.seed] = sample + 1  # type: ignore[index]
            self._playing[key] = (episode, sample)
        return self._playing[key][1]

    def finish(self, episode: Episode) -> int:
        """The sample index of an episode that ended (forgotten after)."""
        sample = self.sample_of(episode)
        del self._playing[id(episode)]
        return sample

    def __call__(self, observations: list[str], infos: list[dict[str, Any]], episodes: list[Episode]) -> Any:
        seeds = [turn_seed(self.run_seed, self.env_id, e.seed or 0, self.sample_of(e), e.num_turns) for e in episodes]
        return self.policy(observations, infos=infos, seeds=seeds)


def turn_seed(run_seed: int, env_id: str, start: int, sample: int, turn: int) -> int:
    """The sampling seed of one turn of one episode: a 31-bit number that any server accepts."""
    import numpy as np

    entropy = [run_seed, zlib.crc32(env_id.encode()), start, sample, turn]
    return int(np.random.SeedSequence(entropy).generate_state(1)[0] >> 1)


def _recorded(settings: EvalSettings) -> dict[str, Any]:
    """The settings as ``settings.json`` and the report keep them."""
    return {k: v for k, v in asdict(settings).items() if k != "progress"}


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
            valid = [e.total_reward for e in finished if e.valid]
            mean = f"mean return {sum(valid) / len(valid):+.3f}" if valid else "no valid episode"
            failed = f", {done - len(valid)} failed" if len(valid) < done else ""
            print(f"{env_id}: {done}/{self.total} episodes, {mean}{failed}", flush=True)


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
        endpoint = ChatEndpoint(settings.model or "", base_url=settings.base_url, api_key_env=settings.api_key_env,
                                temperature=settings.temperature, max_tokens=settings.max_new_tokens,
                                timeout=settings.timeout, hints=ENDPOINT_HINTS)
        policy = ChatEndpointPolicy(endpoint, top_p=settings.top_p, concurrency=settings.concurrency)
        return policy, MessagesTemplate(), _describe(settings)
    from gem_trainer.models import (is_vision_language, load_model, load_processor, load_tokenizer,
                                    quiet_transformers, resolve_device, resolve_dtype, resolve_model,
                                    sampling_model)
    from gem_trainer.decoding.sampling import LocalPolicy, SamplingSettings

    folder = resolve_model(settings.model)
    quiet_transformers()
    processor = load_processor(folder, chat_template=settings.chat_template) if is_vision_language(folder) else None
    tokenizer = processor.tokenizer if processor else load_tokenizer(folder, chat_template=settings.chat_template)
    device = resolve_device(settings.device)
    model = load_model(folder, device=device, dtype=resolve_dtype("auto", device), trainable=False)
    policy = LocalPolicy(sampling_model(model), tokenizer, SamplingSettings(
        max_new_tokens=settings.max_new_tokens, temperature=settings.temperature, top_p=settings.top_p,
        batch_size=settings.concurrency,
    ), record=False, processor=processor)
    return policy, processor or tokenizer, _describe(settings)


def _describe(settings: EvalSettings) -> str:
    """The policy in a few words: the model, and the endpoint serving it."""
    return f"{settings.model} at {settings.base_url}" if settings.base_url else str(settings.model)


def plot_report(reports: Sequence[EnvReport], path: Path, *, title: str = "") -> Path:
    """Success rate and mean return (with its standard error) per environment, as labelled
    horizontal bars: one row per environment, readable for one or for many; with several samples
    per start, a third panel draws pass@k against k, a line per environment."""
    import textwrap

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    rows = range(len(reports))
    sampled = [r for r in reports if r.samples > 1]
    fig, axes = plt.subplots(1, 3 if sampled else 2, figsize=(15 if sampled else 10, 1.7 + 0.6 * len(reports)))
    left, right = axes[0], axes[1]
    right.sharey(left)
    success = [r.success_rate for r in reports]
    left.barh(rows, success, color="tab:green", height=0.6)
    left.set_xlim(0, 1.15)
    left.set_title("success rate", fontsize=10)
    for row, value in zip(rows, success):
        left.annotate(percent(value), (value, row), xytext=(3, 0), textcoords="offset points", va="center")
    means = [r.mean_return for r in reports]
    right.barh(rows, means, xerr=[r.return_stderr for r in reports], capsize=4, height=0.6)
    right.axvline(0, color="black", linewidth=0.8)
    right.set_title("mean return (± standard error)", fontsize=10)
    for row, report in zip(rows, reports):
        mean, side = report.mean_return + 0.0, 1 if report.mean_return >= 0 else -1  # + 0.0: no "-0.000"
        right.annotate(f"{mean:+.3f}", (mean + side * report.return_stderr, row), xytext=(4 * side, 0),
                       textcoords="offset points", va="center", ha="left" if side > 0 else "right")
    right.margins(x=0.25)
    right.tick_params(labelleft=False)
    left.set_yticks(list(rows), [f"{r.env_id}\n{r.episodes} episodes" for r in reports])
    left.invert_yaxis()
    for ax in (left, right):
        ax.grid(axis="x", alpha=0.3)
    if sampled:
        curve = axes[2]
        for r in sampled:
            ks = sorted(map(int, r.pass_at_k))
            curve.plot(ks, [r.pass_at_k[str(k)] for k in ks], marker="o", markersize=3, label=r.env_id)
        curve.set_ylim(0, 1.05)
        curve.xaxis.set_major_locator(MaxNLocator(integer=True))
        curve.set_xlabel("k")
        curve.set_title("pass@k (unbiased estimate)", fontsize=10)
        curve.grid(alpha=0.3)
        curve.legend(fontsize=8)
    return save_figure(fig, path, "\n".join(textwrap.wrap(title, 100)))


def shown_ks(samples: int) -> list[int]:
    """The k of the pass@k columns of the printed table: all up to 4, then powers of two and K."""
    if samples <= 4:
        return list(range(1, samples + 1))
    return sorted({k for k in (1, 2, 4, 8, 16, 32, 64, 128) if k < samples} | {samples})


def _print_report(out: Any, reports: Sequence[EnvReport], describe: str, output: Path) -> None:
    from rich.markup import escape
    from rich.table import Table

    samples = max((r.samples for r in reports), default=1)
    ks = shown_ks(samples) if samples > 1 else []
    table = Table(title=escape(f"gem eval: {describe}"))
    failed = any(r.failed for r in reports)
    columns = ["environment", "episodes", "success", "mean return", "turns", "format errors"]
    columns += ["failed"] if failed else []
    columns += [f"pass@{k}" for k in ks] + ([f"best-of-{samples} return"] if ks else [])
    for column in columns:
        table.add_column(column, justify="left" if column == "environment" else "right")
    for r in reports:
        passed = [percent(r.pass_at_k[str(k)]) if str(k) in r.pass_at_k else "-" for k in ks]
        table.add_row(escape(r.env_id), str(r.episodes) if r.samples == 1 else f"{r.episodes} ({r.starts} x {r.samples})",
                      percent(r.success_rate), f"{r.mean_return:+.3f} ± {r.return_stderr:.3f}",
                      f"{r.turns_per_episode:.2f}", percent(r.format_error_rate),
                      *([f"{r.failed} ({percent(r.failed_rate)})"] if failed else []), *passed,
                      *([f"{r.best_of_k_return:+.3f}"] if ks else []))
    out.print(table)
    for r in reports:
        if r.failed:
            kinds = ", ".join(f"{count} {kind}" for kind, count in r.failed_kinds.items())
            first = r.failed_examples[0]
            error = escape(first["error"] or first["kind"])
            out.print(f"[yellow]{escape(r.env_id)}: {r.failed} episode(s) failed ({kinds}), not the agent's doing: "
                      f"left out of the scores. First: seed {first['seed']}, {error}. "
                      f"`gem eval --resume {escape(str(output))}` plays them again.[/]")
        if r.outcomes is not None:
            out.print(f"{r.env_id}: win rate {percent(r.outcomes['win'])}, draws {percent(r.outcomes['draw'])}, "
                      f"losses {percent(r.outcomes['loss'])}")
        for q in r.quarantined:
            out.print(f"[yellow]{escape(r.env_id)}: slot {q['slot']} quarantined ({escape(q['reason'])}; seeds "
                      f"{q['seeds']}; last error: {escape(str(q['errors'][-1]))})[/]")
    out.print(f"Report: {output / REPORT_FILE}")
    out.print(f"Plot:   {output / PLOT_FILE}")
    out.print(f"Episodes: {output / EPISODES_FILE}")
