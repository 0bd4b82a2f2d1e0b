"""``gem view``: one static HTML page showing the episodes of an evaluation or training run.

The page (the template ``page.html`` with the run's data embedded as JSON) shows every episode's
turns: what was new in each observation (the whole prompt one click away), the action, the reward,
and in a training run each turn's advantage, computed again with the run's estimator and gamma
from the rewards of its step (estimators are deterministic). An episode the infrastructure failed
shows as failed, with its failure's kind and error, and no advantage (it was not trained on).
Filters select an environment, an outcome (success, lost, format error, failed), a step and a
text; the run's plots are embedded. Nothing is fetched: the file works offline and can be sent on
its own.

Images of visual tasks are not kept in episode files (they hold their ``repr``), so the page gets
them by playing each visual episode again from its seed with the same actions (the environment
contract makes that exact); an episode whose replay earns other rewards shows no images, and
says so.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from gem_core.episodes import Episode, load_episodes, message_text, turn_addition
from gem_core.errors import GemError
from gem_core.images import IMAGE

from gem_trainer.evaluation import folder as eval_folder
from gem_trainer.evaluation.scores import by_env, summarise
from gem_trainer.metrics import episode_success, percent

PAGE_FILE = "view.html"  # what is written into the run folder
TEMPLATE = "page.html"  # the page, beside this module


def write_view(run_dir: Path, output: Path | None = None) -> Path:
    """Write the page of the run in ``run_dir`` (a `gem eval` folder or a `gem train` run folder)
    to ``output`` (default ``run_dir/view.html``) and return its path."""
    if (run_dir / eval_folder.EPISODES_FILE).is_file():
        data = _evaluation(run_dir)
    elif (run_dir / "config.yaml").is_file() and (run_dir / "episodes").is_dir():
        data = _training(run_dir)
    else:
        raise GemError(f"{str(run_dir)!r} is neither a `gem eval` folder (no {eval_folder.EPISODES_FILE}) nor a "
                       "`gem train` run folder (no config.yaml and episodes/).")
    template = resources.files(__package__).joinpath(TEMPLATE).read_text(encoding="utf-8")
    # no "<" in the script element: an action that writes "</script>" or "<!--" stays text
    embedded = json.dumps(data, ensure_ascii=False, allow_nan=False, default=repr).replace("<", "\\u003c")
    page = output or run_dir / PAGE_FILE
    page.write_text(template.replace("__GEM_DATA__", embedded), encoding="utf-8")
    return page


def _evaluation(folder: Path) -> dict[str, Any]:
    records = eval_folder.read_episodes(folder / eval_folder.EPISODES_FILE)
    report = _json(folder / eval_folder.REPORT_FILE)
    settings = (report or {}).get("settings") or {}
    if (folder / eval_folder.SETTINGS_FILE).is_file():
        settings = eval_folder.read_settings(folder)[0]
    notes: list[str] = []
    images = _replayed_images([e for e, _ in records], settings.get("env_kwargs") or {}, notes)
    summary = []
    for env_id, played in by_env([e for e, _ in eval_folder.latest(records)]).items():
        r = summarise(env_id, played, 0.0)
        summary.append({"environment": env_id, "episodes": r.episodes, "success": percent(r.success_rate),
                        "mean return": f"{r.mean_return:+.3f}", "turns": f"{r.turns_per_episode:.2f}",
                        "format errors": percent(r.format_error_rate), "failed": _failed(r.failed, r.failed_rate),
                        **{f"pass@{k}": percent(v) for k, v in r.pass_at_k.items() if r.samples > 1}})
    model = settings.get("model") or "a policy"
    return {
        "kind": "eval", "title": f"gem eval: {model}",
        "subtitle": f"{folder}: {len(records)} episodes" + ("" if report else " (no report.json yet: the evaluation "
                                                                               "has not finished, or was killed)"),
        "summary": summary, "plots": _plots(folder, ["report.png"]), "notes": list(dict.fromkeys(notes)),
        "episodes": [_episode(e, images.get(id(e)), sample=sample) for e, sample in records],
    }


def _training(folder: Path) -> dict[str, Any]:
    import yaml

    config = yaml.safe_load((folder / "config.yaml").read_text()) or {}
    notes: list[str] = []
    episodes: list[dict[str, Any]] = []
    steps = sorted(folder.glob("episodes/step-*.jsonl"))
    for path in steps:
        step = int(path.stem.removeprefix("step-"))
        played = load_episodes(path)
        advantages = _advantages(played, config, notes)
        images = _replayed_images(played, {}, notes)
        episodes += [_episode(e, images.get(id(e)), advantages=a, step=step) for e, a in zip(played, advantages)]
    metrics = [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines() if line.strip()] \
        if (folder / "metrics.jsonl").is_file() else []
    summary = [{"step": r["step"], "success": _shown(r["success_rate"], percent),
                "mean return": _shown(r["mean_return"], "{:+.3f}".format),
                "turns": _shown(r["turns_per_episode"], "{:.2f}".format),
                "format errors": _shown(r.get("format_error_rate", 0.0), percent),
                "failed": percent(r.get("failed_rate", 0.0))}
               for r in metrics[:1] + metrics[1:][-1:]]
    return {
        "kind": "train", "title": f"gem train: {config.get('model')} on {', '.join(config.get('envs') or [])}",
        "subtitle": (f"{folder}: {len(steps)} steps, {len(episodes)} episodes; estimator {config.get('estimator')}, "
                     f"gamma {config.get('gamma')}"),
        "summary": summary, "plots": _plots(folder, ["learning_curve.png"]), "notes": list(dict.fromkeys(notes)),
        "episodes": episodes,
    }


def _episode(episode: Episode, images: list[list[str]] | None, *, advantages: Sequence[float] | None = None,
             **where: Any) -> dict[str, Any]:
    """An episode as the page reads it: each turn's prompt as what it keeps of the previous one
    and what it adds, the part shown, the action and the reward."""
    turns = []
    previous, previous_action = "", ""
    for index, turn in enumerate(episode.turns):
        keep = _common_prefix(previous, turn.observation)
        turns.append({"keep": keep, "tail": turn.observation[keep:],
                      "shown": _new_part(previous, previous_action, turn.observation),
                      "action": turn.action, "reward": turn.reward, "terminated": turn.terminated,
                      "truncated": turn.truncated,
                      "advantage": float(advantages[index]) if advantages is not None else None,
                      "images": images[index] if images else []})
        previous, previous_action = turn.observation, turn.action
    last = episode.turns[-1] if episode.turns else None
    failure = episode.failure
    return {"env_id": episode.env_id, "seed": episode.seed, **where, "return": episode.total_reward,
            "success": episode.valid and episode_success(episode),
            "format_error": bool(episode.valid and last and last.info.get("format_error")),
            "failed": None if failure is None else {"kind": failure.kind, "error": failure.error,
                                                    "phase": failure.phase, "turn": failure.turn},
            "turns": turns, "final": _new_part(previous, previous_action, episode.final_observation)}


def _shown(value: float | None, form: Any) -> str:
    return "-" if value is None else form(value)


def _failed(count: int, share: float) -> str:
    return f"{count} ({percent(share)})" if count else "0"


def _new_part(previous: str, action: str, observation: str) -> str:
    """What ``observation`` adds to the conversation (:func:`~gem_core.episodes.turn_addition`);
    messages are shown with their role."""
    added = turn_addition(previous, action, observation)
    return added if isinstance(added, str) else \
        "\n\n".join(f"[{m.get('role')}] {message_text(m.get('content'))}" for m in added)


def _common_prefix(a: str, b: str) -> int:
    return len(os.path.commonprefix([a, b]))


def _advantages(episodes: list[Episode], config: dict[str, Any], notes: list[str]) -> list[list[float] | None]:
    """Each turn's advantage, as the run's estimator computed it from the step's rewards (a
    self-play episode's turns each get their seat's); None for a failed episode."""
    from gem_core import get_estimator

    from gem_trainer.training.rollout import seat_advantages

    try:
        by_episode = seat_advantages(episodes, get_estimator(config.get("estimator", "rebn")),
                                     gamma=config.get("gamma", 0.9), group_size=config.get("group_size", 1))
    except GemError as e:
        notes.append(f"No advantages shown: {e}")
        return [None] * len(episodes)
    rows: list[list[float] | None] = []
    for episode, seats in zip(episodes, by_episode):
        if not episode.valid:  # not trained on: no advantage to show
            rows.append(None)
        elif seats[0][0] is episode:
            rows.append([float(a) for a in seats[0][1]])
        else:
            by_seat = {part.agent: iter(advantages) for part, advantages in seats}
            rows.append([float(next(by_seat[turn.info["agent"]])) for turn in episode.turns])
    return rows


def _replayed_images(episodes: Sequence[Episode], env_kwargs: dict[str, Any], notes: list[str]) -> dict[int, list[list[str]]]:
    """The images each turn of each visual episode showed (PNG data URLs), by ``id`` of the episode."""
    visual = [e for e in episodes if e.turns and IMAGE in e.turns[0].observation]
    if not visual:
        return {}
    import gem_core
    from gem_core.images import data_url, images_of

    found: dict[int, list[list[str]]] = {}
    environments: dict[str, Any] = {}
    for episode in visual:
        try:
            if episode.env_id not in environments:
                environments[episode.env_id] = gem_core.make(episode.env_id, **env_kwargs)
            env = environments[episode.env_id]
            _, info = env.reset(seed=episode.seed)
            shown = []
            for turn in episode.turns:
                shown.append([data_url(image) for image in images_of(info)])
                _, reward, _, _, info = env.step(turn.action)
                if reward != turn.reward:
                    raise GemError(f"seed {episode.seed} earned {reward} on replay where the episode earned {turn.reward}")
        except Exception as e:  # a visual task that cannot be replayed here still shows its text
            notes.append(f"Images of {episode.env_id} not shown: the replay failed ({type(e).__name__}: {e}).")
            continue
        found[id(episode)] = shown
    for env in environments.values():
        env.close()
    return found


def _plots(folder: Path, names: list[str]) -> list[dict[str, str]]:
    return [{"name": name, "src": "data:image/png;base64," + base64.b64encode((folder / name).read_bytes()).decode()}
            for name in names if (folder / name).is_file()]


def _json(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text()) if path.is_file() else None
    except json.JSONDecodeError:
        return None
