"""The terminal environment's shell, limits and containment, in a real bubblewrap sandbox."""

from __future__ import annotations

import time

import pytest

from gem_envs.terminal.env import Reward, TerminalEnv
from tests.tools.conftest import descendants, wait_until_gone


def run(env, command: str) -> tuple[str, dict]:
    observation, reward, terminated, truncated, info = env.step(f"<bash>{command}</bash>")
    assert (reward, terminated, truncated) == (0.0, False, False), observation
    return observation, info


def test_shell_state_persists_between_commands(env):
    run(env, "cd /tmp; export GREETING=hello; sleep 30 &")
    run(env, "mkdir -p work && cd work && LOCAL=1")
    observation, info = run(env, 'pwd; echo "$GREETING $LOCAL"; jobs')
    assert observation.splitlines()[:2] == ["/tmp/work", "hello 1"]
    assert "Running" in observation and "sleep 30" in observation
    assert info == {"exit_code": 0, "timed_out": False}


def test_exit_code_is_reported(env):
    observation, info = run(env, "echo out; echo err >&2; false")
    assert observation == "out\nerr\n[exit code 1]"
    assert info["exit_code"] == 1


def test_timeout_kills_the_command_and_its_children_but_not_the_shell(env):
    run(env, "cd /tmp && export KEEP=yes")
    observation, info = run(env, "{cmd: \"sh -c 'sleep 61 & echo $! > child' ; (setsid sleep 62 &) ; sleep 63\", timeout_secs: 1}")
    assert info == {"exit_code": 124, "timed_out": True}
    assert "timed out after 1 s" in observation and "exit code 124" in observation
    observation, _ = run(env, "echo $KEEP; pwd; kill -0 $(cat child) 2>/dev/null && echo alive || echo dead; "
                              "cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' ' | grep -c 'sleep 6[123]'")
    assert observation.splitlines()[:4] == ["yes", "/tmp", "dead", "0"]


def test_a_stuck_shell_is_replaced(env):
    observation, info = run(env, "{cmd: 'while :; do :; done', timeout_secs: 1}")
    assert info["timed_out"] and "a new one started in /app" in observation
    assert run(env, "echo back; pwd")[0].startswith("back\n/app\n")


def test_exit_ends_the_shell_and_a_new_one_starts(env):
    run(env, "cd /tmp")
    observation, info = run(env, "exit 3")
    assert info["exit_code"] == 3 and "a new one started" in observation
    assert run(env, "pwd")[0].startswith("/app\n")


def test_no_network(env):
    observation, info = run(env, "python3 -c \"import socket; socket.create_connection(('1.1.1.1', 80), timeout=3)\"")
    assert info["exit_code"] != 0 and ("unreachable" in observation or "OSError" in observation)
    observation, info = run(env, "getent hosts example.com")
    assert info["exit_code"] != 0


def test_only_the_workspace_and_tmp_are_writable(env):
    for path in ("/etc/gem", "/usr/gem", "/gem", "/root/gem", "/home/gem", "/tests/../usr/gem"):
        observation, info = run(env, f"touch {path}")
        assert info["exit_code"] != 0, path
    for path in ("/app/gem", "/tmp/gem", "/app/sub/dir/gem"):
        _, info = run(env, f"mkdir -p $(dirname {path}) && touch {path} && test -f {path}")
        assert info["exit_code"] == 0, path
    assert run(env, "whoami")[0].startswith("nobody")


def test_tests_are_not_readable_before_grading(env):
    # Walking the whole file tree takes seconds on a busy machine: more than the default time limit.
    observation, _ = run(env, "{cmd: \"ls -A /tests /logs; find / -xdev -name test_outputs.py 2>/dev/null | head; "
                              "find / -name test_outputs.py -path '*csv-column-sum*' 2>/dev/null | head\", timeout_secs: 120}")
    assert observation == "/logs:\n\n/tests:\n[exit code 0]"


def test_fork_bomb_is_contained(env):
    before = set(descendants())  # other tests' warm code sandboxes live on
    observation, info = run(env, "{cmd: 'bomb() { bomb | bomb; }; bomb', timeout_secs: 2}")
    assert info["timed_out"]
    observation, info = run(env, "ls /proc | grep -c '^[0-9]'")
    assert info["exit_code"] == 0 and int(observation.splitlines()[0]) < 8  # the bomb is gone, the shell alive
    run(env, "bomb() { bomb | bomb & }; bomb")  # a bomb in the background outlives its command
    for _ in range(20):
        assert len(set(descendants()) - before) <= env.limits.max_processes + 8  # bwrap, its init, the supervisor
    # the fixture checks that closing the environment ends it


def test_memory_and_disk_bombs_are_contained(sandbox):
    env = TerminalEnv(task="csv-column-sum", command_timeout=10, memory_mb=512, disk_mb=32, max_file_mb=16)
    try:
        env.reset()
        observation, info = run(env, "python3 -c 'x = bytearray(2 * 1024**3)'")
        assert info["exit_code"] != 0 and "MemoryError" in observation
        observation, info = run(env, "head -c 100M /dev/zero > /app/big")
        assert info["exit_code"] == 128 + 25 and "File size limit exceeded" in observation
        observation, info = run(env, "for i in 1 2 3; do head -c 15M /dev/zero > /app/big$i || exit 1; done")
        assert "No space left" in observation
        assert run(env, "echo still here")[0].startswith("still here")
    finally:
        env.close()


def test_close_leaves_nothing_running(sandbox):
    before = set(descendants())  # other tests' warm code sandboxes live on
    env = TerminalEnv(task="csv-column-sum")
    env.reset()
    run(env, "sleep 100 & (setsid sleep 101 &) ; nohup sleep 102 >/dev/null 2>&1 &")
    deadline = time.monotonic() + 10
    while sum("sleep 10" in command for command in descendants().values()) < 3:  # the detached ones start late
        assert time.monotonic() < deadline
        time.sleep(0.02)
    sandboxed = set(descendants()) - before
    env.close()
    assert wait_until_gone(sandboxed) == {}


def test_huge_output_keeps_head_and_tail(env):
    observation, info = run(env, "seq 1 300000")
    assert observation.startswith("1\n2\n3\n") and observation.endswith("299999\n300000\n[exit code 0]")
    assert "bytes of output truncated" in observation
    assert len(observation) < env.limits.max_output + 200


def test_binary_output_is_text(env):
    observation, info = run(env, "head -c 20000 /dev/urandom; printf '\\0\\xff\\xfe'")
    assert isinstance(observation, str) and info["exit_code"] == 0


@pytest.mark.parametrize("action, error", [
    ("ls -la", "no <bash>"),
    ("<bash>ls", "not closed"),
    ("<bash><bash>ls</bash></bash>", "nested"),
    ("<bash>   </bash>", "no command"),
    ("<bash>{cmd: ls, timeout_secs: -4}</bash>", "timeout_secs"),
])
def test_malformed_actions_end_the_episode_with_the_penalty(env, action, error):
    observation, reward, terminated, truncated, info = env.step(action)
    assert error in observation and "Invalid action" in observation
    assert (reward, terminated, truncated) == (Reward.FORMAT_ERROR, True, False)
    assert info["format_error"] and info["passed"] == 0


def test_finish_terminates_and_grades(env):
    run(env, "awk -F, 'NR > 1 {s += $3} END {printf \"%.2f\\n\", s}' sales.csv > total.txt")
    observation, reward, terminated, truncated, info = env.step("I am done. <finish>")
    assert (reward, terminated, truncated) == (1.0, True, False)
    assert info["passed"] == 1 and info["failed"] == info["errored"] == 0
    assert info["tests"] == {"test_total": "passed"}
    assert "1 of 1 passed" in observation


def test_turn_limit_truncates_and_grades(sandbox):
    env = TerminalEnv(task="csv-column-sum", max_turns=2)
    try:
        env.reset()
        assert env.step("<bash>echo 1603.42 > total.txt</bash>")[1:4] == (0.0, False, False)
        observation, reward, terminated, truncated, info = env.step("<bash>cat total.txt</bash>")
        assert (reward, terminated, truncated) == (1.0, False, True)
        assert "turn limit" in observation and info["passed"] == 1
    finally:
        env.close()


def test_processes_left_by_the_agent_cannot_touch_grading(env):
    run(env, "(while :; do rm -rf /tests/* /logs/* 2>/dev/null; sleep 0.005; done) & "
             "echo 1603.42 > total.txt")
    observation, reward, terminated, truncated, info = env.step("<finish>")
    assert reward == 1.0 and info["passed"] == 1, observation


def test_same_seed_same_task(sandbox):
    first, second = TerminalEnv(), TerminalEnv()
    try:
        names = [first.reset(seed=seed)[1]["task"] for seed in (3, 4, 5)]
        assert [second.reset(seed=seed)[1]["task"] for seed in (3, 4, 5)] == names
        assert len({first.reset(seed=seed)[1]["task"] for seed in range(6)}) > 1
    finally:
        first.close()
        second.close()


def test_clone_copies_the_workspace_and_shell_state(env):
    run(env, "echo hi > note && chmod 600 note && mkdir d && cd d && export V=7")
    twin = env.clone()
    try:
        observation, _ = run(twin, "cat /app/note; stat -c %a /app/note; pwd; echo $V; echo changed > /app/note")
        assert observation.splitlines()[:4] == ["hi", "600", "/app/d", "7"]
        assert run(env, "cat /app/note")[0].startswith("hi\n")
    finally:
        twin.close()


def test_killing_everything_leaves_the_supervisor_or_ends_the_episode_cleanly(env):
    for command in ("pkill python3; kill -9 -1; echo sent", "echo still here"):
        observation, reward, terminated, truncated, info = env.step(f"<bash>{command}</bash>")
        if terminated:  # the sandbox user runs the supervisor too (bwrap run by an ordinary user)
            assert "the sandbox ended" in observation and reward == 0.0 and info["sandbox_error"]
            return
    assert observation.startswith("still here")


def test_actions_with_odd_characters_run(env):
    observation, info = run(env, "printf '%s' '\ud800 \U0001F600 \x01 \0end'")
    assert info["exit_code"] == 0 and "\U0001F600" in observation and "end" in observation


def test_the_tasks_time_budget_truncates(tmp_path, sandbox):
    from dataclasses import replace

    from gem_envs.terminal.tasks import builtin_tasks

    task = replace(next(t for t in builtin_tasks() if t.name == "csv-column-sum"), agent_timeout=1.5)
    env = TerminalEnv(tasks=[task], command_timeout=10)
    try:
        env.reset()
        assert env.step("<bash>sleep 0.2</bash>")[1:4] == (0.0, False, False)
        observation, reward, terminated, truncated, info = env.step("<bash>sleep 5</bash>")
        assert info["timed_out"] and (terminated, truncated) == (False, True)
        assert "time limit (1.5 s of commands) is reached" in observation
    finally:
        env.close()


def test_a_task_folder_the_sandbox_could_see_is_hidden(sandbox):
    import shutil
    import sys
    from pathlib import Path

    from gem_core.sandbox.python import Limits
    from gem_envs.terminal.sandbox import TerminalSandbox

    # The sandbox around this interpreter shows its prefix, as it would show a package installed in /usr.
    folder = Path(sys.prefix) / f"gem-hidden-task-{time.monotonic_ns()}"
    (folder / "tests").mkdir(parents=True)
    (folder / "tests" / "test_outputs.py").write_text("SECRET = 42\n")
    try:
        from gem_core.sandbox import bubblewrap

        seen_at = bubblewrap.interpreter(sys.executable).inside(str(folder))  # elsewhere when under /tmp
        check = f"cat {seen_at}/tests/test_outputs.py"
        with TerminalSandbox(Limits(timeout=10), python=sys.executable) as shown:
            assert shown.run(check).output == "SECRET = 42\n"  # without hiding, it would leak
        with TerminalSandbox(Limits(timeout=10), python=sys.executable, hidden=(folder,)) as hidden:
            result = hidden.run(check)
            assert result.exit_code != 0 and "SECRET" not in result.output
    finally:
        shutil.rmtree(folder)


def test_a_vector_of_terminal_environments_runs_concurrently(sandbox):
    import gem_core

    with gem_core.make_vec("terminal:csv-column-sum-v0", num_envs=3, mode="async") as vec:
        observations, _ = vec.reset(seed=0)
        assert all("sales.csv" in observation for observation in observations)
        actions = ["<bash>echo 1603.42 > total.txt</bash>", "<bash>echo 1 > total.txt</bash>", "<bash>true</bash>"]
        vec.step(actions)
        _, rewards, terminated, _, _ = vec.step(["<finish>"] * 3)
        assert list(rewards) == [1.0, 0.0, 0.0] and all(terminated)
