"""Small environments with known behaviour for the vector-environment tests."""

from __future__ import annotations

import asyncio
import threading
import time

from gem_core import Env

#: Set at the end of the test session so that calls left hanging on purpose return.
RELEASE = threading.Event()


class Countdown(Env):
    """Episodes of ``length`` steps (drawn from the seed when None); each step echoes the
    action. Terminates normally; truncates when ``truncate`` is set."""

    def __init__(self, length: int | None = 3, truncate: bool = False):
        self.length, self.truncate = length, truncate
        self.t, self.episode_length, self.tag = 0, 0, 0
        self.threads: list[int] = []

    def reset(self, seed=None, **options):
        super().reset(seed)
        self.t = 0
        self.episode_length = self.length or self.rng.randint(1, 6)
        self.tag = self.rng.randint(0, 10**6)
        return f"start {self.tag} len {self.episode_length}", {"tag": self.tag}

    def step(self, action):
        self.threads.append(threading.get_ident())
        self.t += 1
        end = self.t >= self.episode_length
        return (f"{self.tag} t{self.t} got {action}", float(self.t), end and not self.truncate,
                end and self.truncate, {"t": self.t})

    def sample_random_action(self):
        return str(self.rng.randint(0, 9))


class Sleepy(Countdown):
    """Blocks for ``delay`` seconds per step; declares itself blocking."""

    blocking = True

    def __init__(self, delay: float = 0.002, length: int | None = 3):
        super().__init__(length)
        self.delay = delay

    def step(self, action):
        time.sleep(self.delay)
        return super().step(action)


class MeetingPoint(Countdown):
    """Each step waits until ``parties`` steps are in progress at once (a barrier), so it only
    succeeds when the vector environment runs the slots concurrently in threads."""

    blocking = True

    def __init__(self, barrier: threading.Barrier, length: int | None = 3):
        super().__init__(length)
        self.barrier = barrier

    def step(self, action):
        self.barrier.wait()
        return super().step(action)


class AsyncMeeting:
    """A rendezvous for native-async steps: every ``parties`` arrivals form a round, and each
    arrival waits for its round to fill (at most 5 s)."""

    def __init__(self, parties: int):
        self.parties, self.arrived = parties, 0

    async def join(self) -> None:
        self.arrived += 1
        round_end = -(-self.arrived // self.parties) * self.parties
        async def filled():
            while self.arrived < round_end:
                await asyncio.sleep(0.001)
        await asyncio.wait_for(filled(), timeout=5)


class NativeAsync(Countdown):
    """Native-async steps that meet at ``meeting`` (so they succeed only when awaited
    concurrently); its sync ``step`` must never be used by an async vector environment."""

    def __init__(self, meeting: AsyncMeeting | None = None, length: int | None = 3):
        super().__init__(length)
        self.meeting = meeting
        self.loops: list[asyncio.AbstractEventLoop] = []

    async def astep(self, action):
        self.loops.append(asyncio.get_running_loop())
        if self.meeting is not None:
            await self.meeting.join()
        return super().step(action)

    def step(self, action):
        raise AssertionError("the sync step of a native-async environment was called")


class Faulty(Countdown):
    """Misbehaves on a schedule: ``faults`` maps a global call number (counted per instance,
    over reset and step calls) to ``"raise"``, ``"hang"``, ``"slow"`` or ``"malformed"``."""

    def __init__(self, faults: dict[int, str] | None = None, length: int | None = 3, slow: float = 0.02):
        super().__init__(length)
        self.faults, self.slow, self.calls = dict(faults or {}), slow, 0

    def _misbehave(self) -> str | None:
        self.calls += 1
        fault = self.faults.get(self.calls)
        if fault == "raise":
            raise RuntimeError(f"injected failure at call {self.calls}")
        if fault == "hang":
            RELEASE.wait(60)
        if fault == "slow":
            time.sleep(self.slow)
        return fault

    def reset(self, seed=None, **options):
        if self._misbehave() == "malformed":
            return "only an observation"
        return super().reset(seed)

    def step(self, action):
        if self._misbehave() == "malformed":
            return "obs", "not a number", False, False, {}
        return super().step(action)


class FaultyOnce(Faulty):
    """:class:`Faulty` whose schedule applies to the first instance made with ``token`` in this
    process only (its replacements behave), so a test can tell a replaced environment apart
    wherever the environments run."""

    spent: set[str] = set()

    def __init__(self, faults: dict[int, str] | None = None, token: str = "", length: int | None = 3,
                 slow: float = 0.02):
        first = token not in FaultyOnce.spent
        FaultyOnce.spent.add(token)
        super().__init__(faults if first else {}, length, slow)


class SeedSensitive(Countdown):
    """Fails to reset for every seed divisible by ``period``."""

    def __init__(self, period: int = 3):
        super().__init__(2)
        self.period = period

    def reset(self, seed=None, **options):
        if seed is not None and seed % self.period == 0:
            raise ValueError(f"no puzzle for seed {seed}")
        return super().reset(seed)


#: Registered ids of the environments above, so every mode (Ray's builds environments from ids
#: on its hosts) runs the same tests.
TEST_IDS = {
    "vector-test:Countdown-v0": "Countdown",
    "vector-test:Sleepy-v0": "Sleepy",
    "vector-test:Faulty-v0": "Faulty",
    "vector-test:FaultyOnce-v0": "FaultyOnce",
    "vector-test:SeedSensitive-v0": "SeedSensitive",
    "vector-test:Stalling-v0": "Stalling",
}


def register_test_envs() -> None:
    from gem_core.errors import DuplicateRegistrationError
    from gem_core.registry import register

    for env_id, name in TEST_IDS.items():
        try:
            register(env_id, f"{__name__}:{name}")
        except DuplicateRegistrationError:
            pass


class Stalling(Countdown):
    """:class:`Countdown` whose episodes of seed ``stall_seed`` hang at their ``turn``-th step until the
    environment is closed (as a sandbox's call returns when its sandbox is killed); ``closed`` and
    ``returned`` tell when that happened."""

    blocking = True

    def __init__(self, stall_seed: int | None = None, turn: int = 2, length: int | None = 3, delay: float = 0.0):
        super().__init__(length)
        self.stall_seed, self.stall_turn, self.delay = stall_seed, turn, delay
        self.closed, self.returned = threading.Event(), threading.Event()
        self.seed = None

    def reset(self, seed=None, **options):
        self.seed = seed
        return super().reset(seed)

    def step(self, action):
        if self.seed == self.stall_seed and self.t + 1 == self.stall_turn:
            self.closed.wait(60)
            self.returned.set()
            raise RuntimeError("the environment was closed under its call")
        if self.delay:
            time.sleep(self.delay)
        return super().step(action)

    def close(self):
        self.closed.set()


class SlowStart(Countdown):
    """Resets take ``delay`` seconds, under the start limit ``limit`` (a class attribute set by
    the test); counts the resets in progress at once."""

    blocking = True
    start_limit = None
    active = 0
    most = 0
    lock = threading.Lock()

    def __init__(self, delay: float = 0.05):
        super().__init__(2)
        self.delay = delay

    def reset(self, seed=None, **options):
        cls = type(self)
        with cls.lock:
            cls.active += 1
            cls.most = max(cls.most, cls.active)
        try:
            time.sleep(self.delay)
            return super().reset(seed)
        finally:
            with cls.lock:
                cls.active -= 1
