"""A base for wrappers that rewrite what the inner environment returns."""

from __future__ import annotations

from typing import Any

from gem_core.core import ResetResult, StepResult, Wrapper


class ResultWrapper(Wrapper):
    """A wrapper whose logic runs on the inner environment's results.

    Subclasses implement :meth:`on_reset` and :meth:`on_step`; this class calls them after both
    the synchronous and the native-async forms of ``reset``/``step``, so the wrapper keeps an
    inner environment's native ``async`` methods usable by async vector environments.
    """

    def on_reset(self, observation: str, info: dict[str, Any]) -> ResetResult:
        """Rewrite the result of the inner ``reset``."""
        return observation, info

    def on_step(self, action: str, result: StepResult) -> StepResult:
        """Rewrite the result of the inner ``step(action)``."""
        return result

    def reset(self, seed: int | None = None, **options: Any) -> ResetResult:
        return self.on_reset(*self.env.reset(seed, **options))

    def step(self, action: str) -> StepResult:
        return self.on_step(action, self.env.step(action))

    async def areset(self, seed: int | None = None, **options: Any) -> ResetResult:
        return self.on_reset(*await self.env.areset(seed, **options))

    async def astep(self, action: str) -> StepResult:
        return self.on_step(action, await self.env.astep(action))
