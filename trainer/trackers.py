"""Experiment trackers: what `gem train` and `gem eval` send to TensorBoard, Weights & Biases,
trackio and MLflow (``--report-to NAME[,NAME]``; ``none``, the default, sends nothing anywhere).

Each tracker is a small class over its own library, behind one interface (:class:`Tracker`):
``log`` numbers at a step, ``log_image`` a PNG, ``log_table`` rows, ``log_text`` a line, ``finish``.
:class:`Trackers` drives those of a run: it names the values (``train/<metric>`` per step;
``eval/<env id>/<metric>``, with ``eval/<env id>/pass_at_k`` at step k so that the tracker draws
pass@k against k), keeps what a resumed run needs to continue the same tracker run in
``trackers.json`` in the run folder, and, when a tracker fails mid-run (disk full, server gone),
says so once and leaves it out: the run goes on, and ``metrics.jsonl`` has every step.

Nothing needs an account or a network by default, and everything lands in the run folder:
TensorBoard's event files in ``tensorboard/``; a W&B run in ``wandb/``, offline unless an API
key is set (``WANDB_API_KEY`` or ``wandb login``) or ``WANDB_MODE`` says otherwise; trackio's
store in ``trackio/`` unless ``TRACKIO_DIR`` names one; MLflow's SQLite store in
``mlflow/mlflow.db`` unless ``MLFLOW_TRACKING_URI`` names a store or a server. Each library's own
variables (``WANDB_PROJECT``, ``WANDB_ENTITY``, ``TRACKIO_SERVER_URL``, ``TRACKIO_SPACE_ID``,
``MLFLOW_EXPERIMENT_NAME``, ...) point them elsewhere.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import logging
import math
import os
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from gem_core.errors import GemError, MissingDependencyError, UnknownNameError

NONE = "none"
STATE_FILE = "trackers.json"
#: The project (W&B, trackio) or experiment (MLflow) runs go to unless the library's variable names one.
PROJECT = "gem"
#: The scores of an environment in ``report.json`` that every tracker gets (with several samples
#: per start, ``best_of_k_return`` and pass@k too).
SCORES = ("episodes", "success_rate", "mean_return", "return_stderr", "turns_per_episode", "format_error_rate",
          "failed_rate")


@dataclass
class RunInfo:
    """What a tracker run is about: a `gem train` or `gem eval` run folder, its settings, and
    the first step this process logs (above 1 when a training run resumes)."""

    folder: Path
    kind: str  # "train" or "eval"
    config: dict[str, Any]
    first_step: int = 0
    resumed: bool = False

    @property
    def name(self) -> str:
        return self.folder.resolve().name


class Tracker(ABC):
    """One tracker's run, started (or, given ``saved``, what :meth:`state` returned when the run
    last ran, continued) by the constructor."""

    name: ClassVar[str]  # as --report-to names it
    label: ClassVar[str]  # as people write it
    module: ClassVar[str]  # the library, imported when a run starts

    @abstractmethod
    def __init__(self, run: RunInfo, saved: dict[str, Any] | None) -> None: ...

    def state(self) -> dict[str, Any]:
        """What continuing this tracker run needs (JSON)."""
        return {}

    @abstractmethod
    def where(self) -> str:
        """Where the values go, and how to look at them."""

    @abstractmethod
    def log(self, values: dict[str, float], step: int) -> None: ...

    @abstractmethod
    def log_image(self, key: str, path: Path, step: int) -> None: ...

    @abstractmethod
    def log_table(self, key: str, columns: list[str], rows: list[list[Any]], step: int) -> None: ...

    @abstractmethod
    def log_text(self, key: str, text: str, step: int) -> None: ...

    @abstractmethod
    def finish(self) -> None: ...


class TensorBoard(Tracker):
    """TensorBoard event files in ``<run>/tensorboard``, written by torch's ``SummaryWriter``; a
    resumed run writes to the same folder, and TensorBoard drops what a killed run logged after
    its checkpoint (``purge_step``)."""

    name, label, module = "tensorboard", "TensorBoard", "tensorboard"

    def __init__(self, run: RunInfo, saved: dict[str, Any] | None) -> None:
        from torch.utils.tensorboard import SummaryWriter

        self.folder = run.folder / "tensorboard"
        self.writer = SummaryWriter(str(self.folder), purge_step=run.first_step if run.resumed else None)
        self.writer.add_text("config", markdown_table(["setting", "value"], sorted(run.config.items())), 0)

    def where(self) -> str:
        return f"{self.folder} (tensorboard --logdir {self.folder})"

    def log(self, values: dict[str, float], step: int) -> None:
        for key, value in values.items():
            self.writer.add_scalar(key, value, step)
        self.writer.flush()

    def log_image(self, key: str, path: Path, step: int) -> None:
        from matplotlib.image import imread

        self.writer.add_image(key, imread(path)[..., :3], step, dataformats="HWC")
        self.writer.flush()

    def log_table(self, key: str, columns: list[str], rows: list[list[Any]], step: int) -> None:
        self.log_text(key, markdown_table(columns, rows), step)

    def log_text(self, key: str, text: str, step: int) -> None:
        self.writer.add_text(key, text, step)
        self.writer.flush()

    def finish(self) -> None:
        self.writer.close()


class WandbStyle(Tracker):
    """A tracker with W&B's logging API (W&B and trackio): ``library`` is its module, ``run`` its run."""

    library: Any
    run: Any

    def log(self, values: dict[str, float], step: int) -> None:
        self.run.log(values, step=step)

    def log_image(self, key: str, path: Path, step: int) -> None:
        self.run.log({key: self.library.Image(str(path))}, step=step)

    def log_table(self, key: str, columns: list[str], rows: list[list[Any]], step: int) -> None:
        self.run.log({key: self.library.Table(columns=columns, data=rows)}, step=step)


class WandB(WandbStyle):
    """A Weights & Biases run in ``<run>/wandb``: offline (``wandb sync`` uploads it) unless an API
    key is set or ``WANDB_MODE`` says otherwise; a resumed run continues the same run id."""

    name, label, module = "wandb", "W&B", "wandb"

    def __init__(self, run: RunInfo, saved: dict[str, Any] | None) -> None:
        import wandb

        self.library = wandb
        mode = None if os.environ.get("WANDB_MODE") else "online" if wandb_key_set() else "offline"
        self.run = wandb.init(
            project=None if os.environ.get("WANDB_PROJECT") else PROJECT, name=run.name, job_type=run.kind,
            dir=str(run.folder), config=run.config, mode=mode, id=(saved or {}).get("id"), resume="allow",
            settings=wandb.Settings(silent=True),
        )
        self.offline = self.run.settings.mode == "offline"

    def state(self) -> dict[str, Any]:
        return {"id": self.run.id}

    def where(self) -> str:
        if self.offline:
            folder = Path(self.run.dir).parent
            return f"{folder}, offline (wandb sync {folder} uploads it)"
        return self.run.url or "W&B"

    def log_text(self, key: str, text: str, step: int) -> None:
        self.run.summary[key] = text

    def finish(self) -> None:
        self.run.finish()


class Trackio(WandbStyle):
    """A trackio run in ``<run>/trackio`` (or ``$TRACKIO_DIR``, or the server or Space that
    ``TRACKIO_SERVER_URL``/``TRACKIO_SPACE_ID`` name); a resumed run continues the run of the same
    name. trackio reads its folder once per process, when it is first imported: a later run in
    the same process logs where the first one did (:meth:`where` says where)."""

    name, label, module = "trackio", "trackio", "trackio"

    def __init__(self, run: RunInfo, saved: dict[str, Any] | None) -> None:
        os.environ.setdefault("TRACKIO_DIR", (saved or {}).get("dir") or str(run.folder / "trackio"))
        import trackio
        from trackio.utils import TRACKIO_DIR

        self.library, self.dir = trackio, Path(TRACKIO_DIR)
        self.project = os.environ.get("TRACKIO_PROJECT", PROJECT)
        name = (saved or {}).get("name") or run.name
        with contextlib.redirect_stdout(io.StringIO()):  # trackio prints how to view it; where() says it once
            self.run = trackio.init(project=self.project, name=name, group=run.kind, config=run.config,
                                    resume="must" if saved else "never")

    def state(self) -> dict[str, Any]:
        return {"name": self.run.name, "dir": str(self.dir)}

    def where(self) -> str:
        return f"{self.dir}, project {self.project} (TRACKIO_DIR={self.dir} trackio show --project {self.project})"

    def log_text(self, key: str, text: str, step: int) -> None:
        self.run.log({key: self.library.Markdown(text)}, step=step)

    def finish(self) -> None:
        with contextlib.redirect_stdout(io.StringIO()):  # trackio says it finished
            self.library.finish()  # the current run, ours: trackio forgets it (else it finishes it again at exit)


class MLflow(Tracker):
    """An MLflow run in the SQLite store ``<run>/mlflow/mlflow.db`` (artifacts beside it), or in
    the store or server ``MLFLOW_TRACKING_URI`` names; experiment ``gem`` unless
    ``MLFLOW_EXPERIMENT_NAME`` names one. A resumed run continues the same MLflow run."""

    name, label, module = "mlflow", "MLflow", "mlflow"

    def __init__(self, run: RunInfo, saved: dict[str, Any] | None) -> None:
        from mlflow.tracking import MlflowClient

        folder = (run.folder / "mlflow").resolve()
        default_uri = f"sqlite:///{folder / 'mlflow.db'}"
        self.uri = (saved or {}).get("tracking_uri") or os.environ.get("MLFLOW_TRACKING_URI") or default_uri
        if self.uri == default_uri:
            folder.mkdir(parents=True, exist_ok=True)
        with _mlflow_starting():
            self.client = MlflowClient(tracking_uri=self.uri)
            self._start(run, saved, folder, default_uri)

    def _start(self, run: RunInfo, saved: dict[str, Any] | None, folder: Path, default_uri: str) -> None:
        from mlflow.entities import Param

        if saved:
            self.run_id = saved["run_id"]
            self.client.update_run(self.run_id, status="RUNNING")
            return
        name = os.environ.get("MLFLOW_EXPERIMENT_NAME", PROJECT)
        experiment = self.client.get_experiment_by_name(name)
        experiment_id = experiment.experiment_id if experiment else self.client.create_experiment(
            name, artifact_location=(folder / "artifacts").as_uri() if self.uri == default_uri else None)
        self.run_id = self.client.create_run(experiment_id, run_name=run.name, tags={"gem.kind": run.kind}).info.run_id
        params = [Param(key, str(value)[:6000]) for key, value in sorted(run.config.items())]  # MLflow's longest value
        self.client.log_batch(self.run_id, params=params)
        self.client.log_dict(self.run_id, run.config, "config.json")

    def state(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "tracking_uri": self.uri}

    def where(self) -> str:
        return f"{self.uri}, run {self.run_id} (mlflow ui --backend-store-uri {self.uri})"

    def log(self, values: dict[str, float], step: int) -> None:
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        self.client.log_batch(self.run_id, metrics=[Metric(key, value, now, step) for key, value in values.items()])

    def log_image(self, key: str, path: Path, step: int) -> None:
        from matplotlib.image import imread

        self.client.log_image(self.run_id, imread(path)[..., :3], key=key, step=step)

    def log_table(self, key: str, columns: list[str], rows: list[list[Any]], step: int) -> None:
        self.client.log_table(self.run_id, {c: [row[i] for row in rows] for i, c in enumerate(columns)}, f"{key}.json")

    def log_text(self, key: str, text: str, step: int) -> None:
        self.client.set_tag(self.run_id, key, text)

    def finish(self) -> None:
        self.client.set_terminated(self.run_id)


@contextlib.contextmanager
def _mlflow_starting() -> Any:
    """While an MLflow run starts: a server that does not answer fails in seconds rather than after
    MLflow's seven retries (where ``MLFLOW_HTTP_REQUEST_MAX_RETRIES`` is unset), and a new store
    makes its tables without saying so."""
    quiet = logging.getLogger("mlflow.store.db.utils")
    level, quiet.level = quiet.level, logging.WARNING
    unset = "MLFLOW_HTTP_REQUEST_MAX_RETRIES" not in os.environ
    if unset:
        os.environ["MLFLOW_HTTP_REQUEST_MAX_RETRIES"] = "1"
    try:
        yield
    finally:
        quiet.setLevel(level)
        if unset:
            os.environ.pop("MLFLOW_HTTP_REQUEST_MAX_RETRIES", None)


TRACKERS: dict[str, type[Tracker]] = {t.name: t for t in (TensorBoard, WandB, Trackio, MLflow)}


def parse_report_to(value: str | Sequence[str] | None) -> list[str]:
    """Tracker names from ``--report-to`` or the ``report_to`` config key: ``"wandb,tensorboard"``,
    a list, or ``none``/None/empty for no tracker. An unknown name raises, naming the known ones."""
    if value is None:
        return []
    parts = value.split(",") if isinstance(value, str) else list(value)
    names: list[str] = []
    for part in parts:
        name = str(part).strip().lower()
        if name and name != NONE and name not in names:
            if name not in TRACKERS:
                raise UnknownNameError("tracker (--report-to)", name, [*TRACKERS, NONE])
            names.append(name)
    if names and any(str(p).strip().lower() == NONE for p in parts):
        raise GemError(f"--report-to {NONE} sends nothing anywhere; it cannot go with {', '.join(names)}.")
    return names


def check_installed(names: Sequence[str]) -> None:
    """Raise :class:`MissingDependencyError`, with the ``pip install`` line, for the first tracker
    whose library is not installed (checked without importing it)."""
    for name in names:
        module = TRACKERS[name].module
        if importlib.util.find_spec(module) is None:
            raise MissingDependencyError(f"--report-to {name}", module, name)


def wandb_key_set() -> bool:
    """Whether W&B has an API key: ``WANDB_API_KEY``, or the entry ``wandb login`` writes to ~/.netrc."""
    if os.environ.get("WANDB_API_KEY"):
        return True
    import netrc
    from urllib.parse import urlparse

    host = urlparse(os.environ.get("WANDB_BASE_URL", "https://api.wandb.ai")).hostname
    try:
        return netrc.netrc().authenticators(host or "") is not None
    except (OSError, netrc.NetrcParseError):
        return False


def markdown_table(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Rows as a Markdown table (TensorBoard's text panel shows them as one)."""
    def cell(value: Any) -> str:
        return (f"{value:.4g}" if isinstance(value, float) else str(value)).replace("|", "\\|")

    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    return "\n".join(lines + ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows])


def numbers(record: dict[str, Any], prefix: str) -> dict[str, float]:
    """The finite numbers of ``record`` (no ``step``), each key under ``prefix/``."""
    return {f"{prefix}/{key}": float(value) for key, value in record.items()
            if key != "step" and isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value)}


@dataclass
class Trackers:
    """The trackers of one run (see the module documentation). Empty, it does nothing."""

    trackers: list[Tracker] = field(default_factory=list)
    warn: Callable[[str], None] = print

    @classmethod
    def open(cls, names: Sequence[str], run: RunInfo, *, say: Callable[[str], None] = print) -> Trackers:
        """Start (or, for a resumed run, continue) a run in each tracker ``names``. A tracker that
        cannot start (a server refusing the key, say) raises :class:`GemError` now, before the run's
        work; each started tracker says where its values go."""
        if not names:
            return cls()
        path = run.folder / STATE_FILE
        saved = json.loads(path.read_text()) if run.resumed and path.is_file() else {}
        check_installed(names)
        opened = cls(warn=say)
        for name in names:
            kind = TRACKERS[name]
            try:
                tracker = kind(run, saved.get(name))
            except Exception as e:  # noqa: BLE001 - any library's failure to start
                opened.finish()
                raise GemError(f"{kind.label} could not start its run ({type(e).__name__}: {e}). Fix it, or "
                               f"leave {name} out of --report-to.") from None
            opened.trackers.append(tracker)
            say(f"{kind.label}: {tracker.where()}")
        path.write_text(json.dumps({**saved, **{t.name: t.state() for t in opened.trackers}}, indent=2))
        return opened

    def __bool__(self) -> bool:
        return bool(self.trackers)

    def log_step(self, record: dict[str, Any], plot: Path | None = None) -> None:
        """One training step: its metrics as ``train/<metric>``, and the learning curve so far."""
        step = int(record["step"])
        self._each("log", numbers(record, "train"), step)
        if plot is not None:
            self._each("log_image", "train/learning_curve", plot, step)

    def log_report(self, report: dict[str, Any], plot: Path | None = None) -> None:
        """An evaluation's report at step 0: each environment's scores (``eval/<env id>/<score>``),
        their table (``eval/scores``) and the plot (``eval/report``); with several samples per
        start, ``eval/<env id>/pass_at_k`` at step k."""
        environments = report["environments"]
        values: dict[str, float] = {}
        for env in environments:
            scores = {key: env[key] for key in SCORES}
            if env["samples"] > 1:
                scores["best_of_k_return"] = env["best_of_k_return"]
            values.update(numbers(scores, f"eval/{env['env_id']}"))
        self._each("log", values, 0)
        most = max((env["samples"] for env in environments), default=1)
        ks = [str(k) for k in range(1, most + 1)]
        columns = ["environment", "episodes", "success_rate", "mean_return", "turns_per_episode",
                   "format_error_rate", "failed", *(f"pass@{k}" for k in ks if most > 1)]
        rows = [[env["env_id"], env["episodes"], env["success_rate"], env["mean_return"], env["turns_per_episode"],
                 env["format_error_rate"], env["failed"], *(env["pass_at_k"].get(k, float("nan")) for k in ks if most > 1)]
                for env in environments]
        self._each("log_table", "eval/scores", columns, rows, 0)
        if plot is not None:
            self._each("log_image", "eval/report", plot, 0)
        for k in ks if most > 1 else []:  # pass@k against k
            at_k = {f"eval/{env['env_id']}/pass_at_k": env["pass_at_k"][k]
                    for env in environments if k in env["pass_at_k"]}
            self._each("log", at_k, int(k))

    def log_text(self, key: str, text: str, step: int) -> None:
        self._each("log_text", key, text, step)

    def finish(self) -> None:
        """End every tracker's run (each failure reported, none raised)."""
        for tracker in list(self.trackers):
            self._call(tracker, "finish")
        self.trackers = []

    def _each(self, method: str, *args: Any) -> None:
        for tracker in list(self.trackers):
            self._call(tracker, method, *args)

    def _call(self, tracker: Tracker, method: str, *args: Any) -> None:
        try:
            getattr(tracker, method)(*args)
        except Exception as e:  # noqa: BLE001 - a tracker's failure must not stop the run
            self.trackers.remove(tracker)
            self.warn(f"{tracker.label} stopped recording ({type(e).__name__}: {e}); the run goes on without it, "
                      "and its run folder keeps every value.")
