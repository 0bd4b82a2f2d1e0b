"""Terminal environments: an agent works in a sandboxed shell and is graded by hidden tests.

Each episode is one task (see :mod:`gem_envs.terminal.tasks`) in a fresh bubblewrap sandbox
(:mod:`gem_envs.terminal.sandbox`) or container (:mod:`gem_envs.terminal.container`). Every turn
the agent runs one command in a persistent shell, or finishes. When the episode ends
(``<finish>``, the turn limit, or a format error), the shell and everything it started are
stopped, the task's tests are copied into ``/tests`` (the agent never saw them) and run in the
same sandbox; the reward is the weighted fraction that passed.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import io
import json
import math
import os
import re
import shlex
import tarfile
import threading
import time
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gem_core.core import Env
from gem_core.errors import GemError
from gem_core.sandbox.python import Limits, SandboxError
from gem_core.vector.starts import StartLimit

from gem_envs.terminal import pytest_kit
from gem_envs.terminal.sandbox import LOGS_DIR, TESTS_DIR, CommandResult, ShellSandbox, TerminalSandbox, tar_archive
from gem_envs.terminal.tasks import (BACKENDS, BUILTIN_DIR, DIFFICULTIES, HARBOR, TaskUnsupportedError, TerminalTask,
                                     builtin_tasks, load_tasks)

TIMEOUT_EXIT_CODE = 124
DEFAULT_MEMORY_MB, DEFAULT_DISK_MB, DEFAULT_CPUS, DEFAULT_BUILD_TIMEOUT = 2048, 256, 1.0, 1800.0
TEST_OUTPUT_KEPT = 2000  # characters of the test script's output in info when it reported no test
PROMPT = (
    "You are working in a Linux shell (bash) in {workdir}, {network}.\n\n"
    "Task:\n{instruction}\n\n"
    "Run one command per turn as <bash>COMMANDS</bash> (several lines are fine); you will see its output "
    "and exit code. The shell persists between turns: the directory, variables and background jobs stay. "
    "A command is stopped after {timeout:g} seconds; to allow more, write "
    "<bash>{{cmd: COMMANDS, timeout_secs: N}}</bash> (at most {max_timeout:g}). "
    "When the task is done, reply <finish>. You have {max_turns} turns."
)
_TAG = re.compile(r"<(/?)(bash|finish)\s*(/?)>", re.IGNORECASE)
#: How many terminal containers may start at once in one process (each start runs, and may first
#: build, an image: seconds of CPU and disk); bubblewrap sandboxes start in milliseconds, unlimited.
CONTAINER_STARTS = StartLimit("terminal containers", at_once=max(2, (os.cpu_count() or 2) // 2))
_RANDOM_ACTIONS = ("<bash>ls -la</bash>", "<bash>pwd</bash>", "<bash>find . -maxdepth 2 | head -50</bash>",
                   "<bash>head -n 20 *</bash>")


class Reward:
    """Rewards of the terminal environments (documented in docs/envs.md)."""

    FORMAT_ERROR = -0.1  # added to the grade when an action has no well-formed tag; the episode ends


@dataclass(frozen=True)
class Action:
    """A parsed action: ``kind`` is ``"bash"``, ``"finish"`` or ``"invalid"`` (``error`` says why)."""

    kind: str
    command: str = ""
    timeout: float | None = None
    error: str = ""


def parse_action(text: str) -> Action:
    """The first ``<bash>...</bash>`` or ``<finish>`` in ``text``; never raises.

    A ``<bash>`` body that is a YAML mapping with ``cmd`` (and optionally ``timeout_secs``) is read
    as such; any other body is the command itself.
    """
    if not isinstance(text, str):
        return Action("invalid", error="the action is not text")
    opening = next((m for m in _TAG.finditer(text) if not m.group(1)), None)
    if opening is None:
        return Action("invalid", error="no <bash>...</bash> or <finish> tag")
    if opening.group(2).lower() == "finish":
        return Action("finish")
    if opening.group(3):
        return Action("invalid", error="<bash/> holds no command")
    body_start = opening.end()
    closing = re.compile(r"</bash\s*>", re.IGNORECASE).search(text, body_start)
    if closing is None:
        return Action("invalid", error="the <bash> tag is not closed with </bash>")
    body = text[body_start:closing.start()]
    if re.search(r"<bash\s*>", body, re.IGNORECASE):
        return Action("invalid", error="<bash> tags are nested")
    command, timeout = _yaml_form(body)
    if timeout is not None and not (isinstance(timeout, (int, float)) and not isinstance(timeout, bool)
                                    and 0 < timeout < float("inf")):
        return Action("invalid", error=f"timeout_secs must be a positive number of seconds, not {timeout!r}")
    if not command.strip():
        return Action("invalid", error="the <bash> tag holds no command")
    return Action("bash", command=command, timeout=None if timeout is None else float(timeout))


def _yaml_form(body: str) -> tuple[str, Any]:
    stripped = body.strip()
    if not (stripped.startswith("{") and stripped.endswith("}")) or "cmd" not in stripped:
        return body, None
    import yaml

    try:
        loaded = yaml.safe_load(stripped)
    except yaml.YAMLError:
        return body, None  # a shell group such as `{ a; b; }`
    if not isinstance(loaded, dict) or not isinstance(loaded.get("cmd"), str):
        return body, None
    return loaded["cmd"], loaded.get("timeout_secs")


@dataclass
class Grade:
    """The tests' verdict: the weighted fraction passed (a Harbor task's reward), which tests passed,
    failed or errored, a Harbor task's named ``rewards``, and ``notes`` grading made on itself."""

    score: float
    passed: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    errored: list[str] = field(default_factory=list)
    output: str = ""
    rewards: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def info(self) -> dict[str, Any]:
        info = {"score": self.score, "passed": len(self.passed), "failed": len(self.failed),
                "errored": len(self.errored), "tests": {**{n: "passed" for n in self.passed},
                                                         **{n: "failed" for n in self.failed},
                                                         **{n: "errored" for n in self.errored}}}
        if not self.passed and not self.failed and self.errored:  # the tests reported nothing: say why
            info["test_output"] = self.output[-TEST_OUTPUT_KEPT:]
        if self.rewards:
            info["rewards"] = dict(self.rewards)
        if self.notes:
            info["test_notes"] = list(self.notes)
        return info


# What a Harbor task's tests wrote: the file's name on the first line, then its content.
_READ_REWARD = (f"cd {LOGS_DIR}/verifier && for f in reward.json reward.txt; do "
                'if [ -f "$f" ]; then echo "$f"; cat "$f"; exit; fi; done')


def read_reward(output: str) -> tuple[float, dict[str, float], str]:
    """``(episode reward, named rewards, problem)`` from a Harbor task's reward file, read as Harbor
    reads it: ``/logs/verifier/reward.json`` (a number, or an object of named numbers) before
    ``reward.txt`` (a number). The episode reward is the one named ``reward``, else the only one,
    else their mean. A missing or unreadable file gives 0.0, and ``problem`` says why."""
    name, _, text = output.partition("\n")
    if name not in ("reward.json", "reward.txt"):
        return 0.0, {}, f"GEM: the tests wrote neither {LOGS_DIR}/verifier/reward.json nor reward.txt; the reward is 0."
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    rewards = value if isinstance(value, dict) else {"reward": value}
    if not rewards or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                              for v in rewards.values()):
        return 0.0, {}, (f"GEM: {LOGS_DIR}/verifier/{name} holds {text.strip()[:200]!r}, not "
                         f"{'a number or named numbers' if name == 'reward.json' else 'a number'}; the reward is 0.")
    rewards = {str(k): float(v) for k, v in rewards.items()}
    score = rewards.get("reward", next(iter(rewards.values())) if len(rewards) == 1 else
                        sum(rewards.values()) / len(rewards))
    return score, rewards, ""


# pytest's summary lines (`pytest -rA`) and unittest's verbose lines (`python3 -m unittest -v`)
_PYTEST_LINE = re.compile(r"^(PASSED|FAILED|ERROR|XPASS|XFAIL)\s+(\S+::\S+)", re.MULTILINE)
_UNITTEST_LINE = re.compile(r"^(\w+) \(([\w.]+)\)\s*\.\.\. (ok|FAIL|ERROR|unexpected success)$", re.MULTILINE)
_VERDICTS = {"PASSED": "passed", "XFAIL": "passed", "ok": "passed", "FAILED": "failed", "FAIL": "failed",
             "XPASS": "failed", "unexpected success": "failed", "ERROR": "errored"}


def parse_test_output(output: str) -> dict[str, str]:
    """Test name -> ``passed``/``failed``/``errored`` from pytest or unittest output."""
    results: dict[str, str] = {}
    for verdict, name in _PYTEST_LINE.findall(output):
        results[name.split("::")[-1]] = _VERDICTS[verdict]
    for name, _, verdict in _UNITTEST_LINE.findall(output):
        results[name] = _VERDICTS[verdict]
    return results


def weighted_score(results: dict[str, str], weights: dict[str, float]) -> float:
    if not results:
        return 0.0
    total = sum(weights.get(name, 1.0) for name in results)
    passed = sum(weights.get(name, 1.0) for name, verdict in results.items() if verdict == "passed")
    return passed / total if total > 0 else 0.0


class TerminalEnv(Env):
    """A terminal task per episode, solved by shell commands and graded by hidden tests.

    The tasks are the shipped ones (all, or one ``difficulty``), or those under ``path`` (a
    terminal-bench or Harbor task folder, or a folder of them), or ``tasks``; ``task`` picks one
    by name. ``reset(seed)`` draws the task from the seed; ``reset(task=NAME)`` picks it.

    Actions: ``<bash>COMMANDS</bash>`` (or ``<bash>{cmd: ..., timeout_secs: N}</bash>``) runs
    commands; ``<finish>`` ends the episode. Each command may run ``command_timeout`` seconds
    (``max_command_timeout`` when it asks for more); its output is kept to ``max_output``
    bytes (head and tail). Limits on every process: ``memory_mb`` of address space,
    ``max_processes``, ``max_file_mb`` per file; the workspace, ``/tmp``, ``/tests`` and ``/logs``
    hold ``disk_mb`` each (in the bubblewrap sandbox). ``memory_mb``, ``cpus``, ``disk_mb`` and
    ``build_timeout``, when not given, are a Harbor task's own (``memory_mb``, ``cpus``,
    ``storage_mb``, ``build_timeout_sec`` in its ``task.toml``), else 2048, 1, 256 and 1800.

    ``backend``: ``"bubblewrap"`` (the light sandbox, for tasks whose Dockerfile it can read),
    ``"podman"`` or ``"docker"`` (a container built from the task's Dockerfile, with ``memory_mb``
    of memory, ``max_processes`` processes and ``cpus`` CPUs), or ``"auto"``: bubblewrap for each
    task that needs nothing else, else a container engine that is present. ``network`` turns the
    container's network on (it is off by default; the bubblewrap sandbox has none), for the tasks
    whose ``task.toml`` does not turn it off.
    ``base_images`` maps image names (exact, or shell patterns) to local images for building.

    An environment that may run a task in a container declares :data:`CONTAINER_STARTS` as its
    ``start_limit``, so vector environments start at most that many containers at once.

    Rewards: 0 per command; at the end, the weighted fraction of tests passed (a Harbor task's:
    the reward its tests wrote, see :func:`read_reward`), plus :attr:`Reward.FORMAT_ERROR` if the
    episode ended on a malformed action. ``terminated`` after
    ``<finish>`` or a format error, ``truncated`` at ``max_turns`` or when the commands have used
    the task's time budget (``agent_timeout``).
    """

    blocking = True  # a step waits on the sandbox

    def __init__(
        self,
        path: str | Path | None = None,
        difficulty: str | None = None,
        task: str | None = None,
        tasks: list[TerminalTask] | None = None,
        max_turns: int = 30,
        command_timeout: float = 30.0,
        max_command_timeout: float = 180.0,
        max_output: int = 8192,
        memory_mb: int | None = None,
        max_processes: int = 128,
        max_file_mb: int = 128,
        disk_mb: int | None = None,
        backend: str = "auto",
        network: bool = False,
        base_images: Mapping[str, str] | None = None,
        cpus: float | None = None,
        build_timeout: float | None = None,
    ):
        if difficulty is not None and difficulty not in DIFFICULTIES:
            raise GemError(f"difficulty must be one of {', '.join(DIFFICULTIES)}, not {difficulty!r}.")
        if backend not in BACKENDS:
            raise GemError(f"backend must be one of {', '.join(BACKENDS)}, not {backend!r}.")
        if cpus is not None and not (isinstance(cpus, (int, float)) and not isinstance(cpus, bool) and cpus > 0):
            raise GemError(f"cpus must be a positive number, not {cpus!r}.")
        self.backend, self.network, self.cpus, self.build_timeout = backend, bool(network), cpus, build_timeout
        self.memory_mb, self.disk_mb = memory_mb, disk_mb
        self.base_images = dict(base_images or {})
        if tasks is None:
            tasks = load_tasks(path, backend, self.network) if path is not None else builtin_tasks()
        runnable = self._runnable(tasks, single=path is not None and len(tasks) == 1)
        tasks = [t for t, _ in runnable]
        self.tasks = [t for t in tasks if difficulty is None or t.difficulty == difficulty]
        if task is not None:
            self.tasks = [t for t in self.tasks if t.name == task]
            if not self.tasks:
                raise GemError(f"No terminal task named {task!r}; known: {', '.join(t.name for t in tasks)}.")
        if not self.tasks:
            raise GemError("No terminal task to play: the selection is empty.")
        chosen = {id(t) for t in self.tasks}
        self._in_containers = any(backend != "bubblewrap" for t, backend in runnable if id(t) in chosen)
        if max_turns < 1:
            raise GemError(f"max_turns must be at least 1, not {max_turns}.")
        if not 0 < command_timeout <= max_command_timeout:
            raise GemError("command_timeout must be positive and at most max_command_timeout.")
        self.max_turns, self.command_timeout = max_turns, float(command_timeout)
        self.limits = Limits(timeout=float(max_command_timeout), memory_mb=memory_mb or DEFAULT_MEMORY_MB,
                             cpu_seconds=int(max_command_timeout) * 4, max_processes=max_processes,
                             max_file_mb=max_file_mb, tmp_mb=disk_mb or DEFAULT_DISK_MB, max_output=max_output)
        self.task: TerminalTask | None = None
        self.sandbox: ShellSandbox | None = None
        self._tools: tuple[str, list[str]] = ("", [])  # the episode's test tools: the shell line, and notes
        self.turn, self.done, self.agent_seconds = 0, True, 0.0

    def _runnable(self, tasks: list[TerminalTask], single: bool) -> list[tuple[TerminalTask, str]]:
        """The tasks this backend can run, with the backend each runs in; the others skipped with
        a warning (raised for one task)."""
        kept = []
        for task in tasks:
            try:
                kept.append((task, task.backend(self.backend, self.network)))
            except TaskUnsupportedError as e:
                if single:
                    raise
                warnings.warn(f"Skipping terminal task {task.name!r}: {e}", stacklevel=3)
        return kept

    @property
    def start_limit(self) -> StartLimit | None:  # type: ignore[override]
        """:data:`CONTAINER_STARTS` when a task may run in a container, else None."""
        return CONTAINER_STARTS if self._in_containers else None

    # --- episode ----------------------------------------------------------------------------

    def reset(self, seed: int | None = None, task: str | None = None, **options: Any) -> tuple[str, dict[str, Any]]:
        super().reset(seed)
        if task is not None:
            chosen = [t for t in self.tasks if t.name == task]
            if not chosen:
                raise GemError(f"No terminal task named {task!r}; known: {', '.join(t.name for t in self.tasks)}.")
            self.task = chosen[0]
        else:
            self.task = self.rng.choice(self.tasks)
        self._start(self.task)
        self._prepare(self.task)
        self._tools = self._test_tools(self.task)  # now: a tool GEM cannot supply fails before the agent works
        self.turn, self.done, self.agent_seconds = 0, False, 0.0
        return self._prompt(), {"task": self.task.name, "difficulty": self.task.difficulty}

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self.done or self.sandbox is None:
            raise GemError("The episode is over: call reset() first.")
        self.turn += 1
        try:
            return self._step(parse_action(action))
        except SandboxError as e:  # the sandbox died under the agent (say, `kill -9 -1`): nothing to grade
            self.close()
            return (f"[the sandbox ended: {e}] The episode ends ungraded.", 0.0, True, False,
                    {**Grade(0.0).info(), "sandbox_error": str(e)})

    def _step(self, parsed: Action) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if parsed.kind == "bash":
            left = self.task.agent_timeout - self.agent_seconds
            timeout = min(parsed.timeout or self.command_timeout, self.limits.timeout, max(left, 0.001))
            start = time.monotonic()
            result = self.sandbox.run(parsed.command, timeout)
            self.agent_seconds += time.monotonic() - start
            observation = self._shown(result, timeout)
            info = {"exit_code": result.exit_code, "timed_out": result.timed_out}
            if self.turn < self.max_turns and self.agent_seconds < self.task.agent_timeout:
                return observation, 0.0, False, False, info
            limit = (f"The turn limit ({self.max_turns})" if self.turn >= self.max_turns
                     else f"The task's time limit ({self.task.agent_timeout:g} s of commands)")
            grade = self._grade()
            return (f"{observation}\n\n{limit} is reached. {self._verdict(grade)}",
                    grade.score, False, True, {**info, **grade.info()})
        grade = self._grade()
        if parsed.kind == "finish":
            return self._verdict(grade), grade.score, True, False, grade.info()
        return (f"Invalid action: {parsed.error}. The episode ends. {self._verdict(grade)}",
                grade.score + Reward.FORMAT_ERROR, True, False, {**grade.info(), "format_error": True})

    def sample_random_action(self) -> str:
        return self.action_rng.choice(_RANDOM_ACTIONS)

    def grade(self) -> Grade:
        """Stop the agent's processes and run the task's tests (this ends the episode)."""
        if self.sandbox is None:
            raise GemError("No episode to grade: call reset() first.")
        return self._grade()

    def run_solution(self) -> CommandResult:
        """Run the task's reference solution in the shell (to check a task; not for agents)."""
        if self.sandbox is None or self.done:
            raise GemError("No episode in progress: call reset() first.")
        self.sandbox.put("/tmp", tar_archive([(self.task.solution, ".gem-solution.sh")]))
        return self.sandbox.run("bash /tmp/.gem-solution.sh", self.limits.timeout)

    def clone(self) -> TerminalEnv:
        """A copy in a new sandbox: the same task, workspace, shell directory and exported variables."""
        twin = copy.copy(self)
        twin._rng, twin._np_rng = copy.deepcopy(self._rng), copy.deepcopy(self._np_rng)
        twin._action_rng = copy.deepcopy(self._action_rng)
        twin.sandbox = None
        if self.sandbox is None or self.task is None:
            return twin
        if self.sandbox.workdir == "/":
            raise GemError(f"clone() copies the workspace folder, and the image of {self.task.name!r} sets no WORKDIR "
                           "(the shell starts in /).")
        workspace = self.sandbox.snapshot()
        state = self.sandbox.run('printf "cd %q\\n" "$PWD"; export -p', 10.0) if not self.done else None
        twin._start(self.task)
        twin.sandbox.put(self.sandbox.workdir, workspace, clean=True)
        if state is not None and state.exit_code == 0:
            twin.sandbox.run(state.output, 10.0)
        return twin

    def close(self) -> None:
        if self.sandbox is not None:
            self.sandbox.close()
            self.sandbox = None
        self.done = True

    # --- helpers ----------------------------------------------------------------------------

    def _start(self, task: TerminalTask) -> None:
        """A fresh sandbox or container for ``task``; the previous one is removed meanwhile."""
        previous, self.sandbox = self.sandbox, None
        closing = threading.Thread(target=previous.close) if previous is not None else None
        if closing is not None:
            closing.start()
        try:
            self.sandbox = self._new_sandbox(task)
        finally:
            if closing is not None:
                closing.join()

    def _new_sandbox(self, task: TerminalTask) -> ShellSandbox:
        backend = task.backend(self.backend, self.network)
        limits = self._limits(task)
        binds = ((str(pytest_kit.kits_root()), pytest_kit.KITS_PATH),) if task.test_tools else ()
        if backend == "bubblewrap":
            return TerminalSandbox(limits, workdir=task.workdir, env=dict(task.env),
                                   hidden=(task.root, BUILTIN_DIR), binds=binds)
        from gem_envs.terminal import container

        if task.network_mode == "allowlist" and task.internet(self.network):
            warnings.warn(f"The terminal task {task.name!r} allows only some hosts (network_mode = \"allowlist\"); "
                          f"{backend} cannot enforce that: its container gets the whole network.", stacklevel=3)
        build_timeout = self.build_timeout or task.build_timeout or DEFAULT_BUILD_TIMEOUT
        image = container.image_for(backend, task, self.base_images, build_timeout)
        workdir = task.container_workdir or container.image_workdir(backend, image)
        return container.ContainerSandbox(backend, image, limits, workdir, network=task.internet(self.network),
                                          cpus=self.cpus or task.cpus or DEFAULT_CPUS, binds=binds,
                                          disk_mb=self.disk_mb or task.storage_mb)

    def _limits(self, task: TerminalTask) -> Limits:
        """The limits of ``task``'s episodes: the keywords given, else its task.toml's, else the defaults."""
        return dataclasses.replace(self.limits, memory_mb=self.memory_mb or task.memory_mb or DEFAULT_MEMORY_MB,
                                   tmp_mb=self.disk_mb or task.storage_mb or DEFAULT_DISK_MB)

    def _prepare(self, task: TerminalTask) -> None:
        """Place the task's files and run its set-up commands (a container's image holds them)."""
        if not isinstance(self.sandbox, TerminalSandbox):
            return
        if task.files:
            self.sandbox.put(task.workdir, _archive(task, task.workdir))
        for command in task.setup:
            result = self.sandbox.execute(command, timeout=self.limits.timeout)
            if result.exit_code != 0:
                raise GemError(f"Setting up the terminal task {task.name!r} failed: `{command}` exited with "
                               f"{result.exit_code}: {result.output[-1000:]}")

    def _grade(self) -> Grade:
        task = self.task
        self.done = True
        self.sandbox.kill_all()  # nothing the agent left running may touch the tests or their results
        self.sandbox.put(TESTS_DIR, _tests_archive(task), clean=True)
        self.sandbox.put(LOGS_DIR, _empty_logs(), clean=True)
        setup, notes = self._tools[0], list(self._tools[1])
        script = "".join(f"echo {shlex.quote(note)}; " for note in notes) + setup + task.test_command
        result = self.sandbox.execute(script, timeout=task.test_timeout, isolated=True,
                                      env={"TEST_DIR": TESTS_DIR, "T_BENCH_TEST_DIR": TESTS_DIR})
        results = parse_test_output(result.output)
        rewards: dict[str, float] = {}
        if task.layout == HARBOR:
            written = self.sandbox.execute(_READ_REWARD, timeout=10.0, isolated=True)
            score, rewards, problem = read_reward(written.output)
            if problem:
                notes.append(problem)
        else:
            score = weighted_score(results, dict(task.test_weights))
        by = {verdict: [n for n, v in results.items() if v == verdict] for verdict in ("passed", "failed", "errored")}
        if not results and score < 1.0:
            by["errored"].append(task.test_command)  # the tests did not run
        self.sandbox.kill_all()
        return Grade(score, by["passed"], by["failed"], by["errored"], result.output, rewards, notes)

    def _test_tools(self, task: TerminalTask) -> tuple[str, list[str]]:
        """The shell line that supplies ``task``'s test tools, and what grading should say about them."""
        if not task.test_tools:
            return "", []
        python, notes = self.sandbox.python, []
        asked = re.search(r"\d+(\.\d+)?", task.test_python)
        if asked and not (python == asked.group() or python.startswith(asked.group() + ".")):
            notes.append(f"GEM: the test runner asks for Python {asked.group()}, which uv cannot download offline; "
                         f"the test tools ({', '.join(pytest_kit.pinned(task.test_tools))}) run on the "
                         f"{self.sandbox.kind}'s python3 ({python}) instead.")
        return pytest_kit.test_environment(pytest_kit.kit(task.test_tools, python)) + "; ", notes

    def _prompt(self) -> str:
        network = "with network access" if self.sandbox.network else "with no network access"
        return PROMPT.format(workdir=self.sandbox.workdir, network=network, instruction=self.task.instruction,
                             timeout=self.command_timeout, max_timeout=self.limits.timeout, max_turns=self.max_turns)

    def _verdict(self, grade: Grade) -> str:
        ran = len(grade.passed) + len(grade.failed) + len(grade.errored)
        text = f"Tests: {len(grade.passed)} of {ran} passed (score {grade.score:.2f})."
        if grade.failed or grade.errored:
            text += " Not passed: " + ", ".join(grade.failed + grade.errored) + "."
        return text

    def _shown(self, result: CommandResult, timeout: float) -> str:
        lines = [result.output.rstrip("\n")] if result.output else []
        if result.timed_out:
            lines.append(f"[timed out after {timeout:g} s: the command and everything it started were killed; "
                         f"exit code {TIMEOUT_EXIT_CODE}]")
        else:
            lines.append(f"[exit code {result.exit_code}]")
        if result.restarted:
            lines.append(f"[the shell ended; a new one started in {self.sandbox.workdir}: variables, directory "
                         "and background jobs were reset]")
        return "\n".join(lines)


def _archive(task: TerminalTask, workdir: str) -> bytes:
    """The task's workspace files as a tar archive relative to ``workdir``; a task folder copied
    whole leaves out its tests, solution and metadata."""
    hidden = {"tests", "solution", "solution.sh", "run-tests.sh", "task.yaml", "task.toml", "instruction.md",
              "Dockerfile", "docker-compose.yaml", "environment"}
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for host, target in task.files:
            name = target[len(workdir):].lstrip("/") or "."
            if host in (task.root.resolve(), (task.root / "environment").resolve()):
                for child in sorted(host.iterdir()):
                    if child.name not in hidden:
                        tar.add(str(child), arcname=f"{name}/{child.name}")
            else:
                tar.add(str(host), arcname=name)
    return buffer.getvalue()


def _tests_archive(task: TerminalTask) -> bytes:
    """The task's tests, with its test script as it runs offline."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for path, name in task.test_files:
            tar.add(str(path), arcname=name)
        script = task.test_script.encode()
        info = tarfile.TarInfo(task.test_script_name)
        info.size, info.mode = len(script), 0o755
        tar.addfile(info, io.BytesIO(script))
    return buffer.getvalue()


def _empty_logs() -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name in ("verifier", "agent"):
            info = tarfile.TarInfo(name)
            info.type, info.mode = tarfile.DIRTYPE, 0o777
            tar.addfile(info)
    return buffer.getvalue()


class TaskFolderEnv(TerminalEnv):
    """:class:`TerminalEnv` on the tasks under ``path`` (terminal-bench or Harbor folders)."""

    def __init__(self, path: str | Path | None = None, **options: Any):
        if path is None:
            raise GemError("terminal:Tasks-v0 plays your own tasks: pass path=DIR, a terminal-bench or Harbor "
                           "task folder or a folder of them (the shipped tasks are terminal:All-v0).")
        super().__init__(path=path, **options)


# make() checks keywords against the signature: show it TerminalEnv's, so a typo is named there.
TaskFolderEnv.__signature__ = inspect.signature(TerminalEnv)
