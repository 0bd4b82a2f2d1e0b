"""Exception types raised by GEM.

Every error a user can cause (a typo in an id, a wrong keyword, a broken plugin, missing data)
is a :class:`GemError` with a message that says what to do; the ``gem`` command prints these
without a traceback.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


class GemError(Exception):
    """Base class of every error GEM raises on purpose."""


class UnknownNameError(GemError, KeyError):
    """A name (environment id, wrapper, tool, estimator, adapter) that nothing registered."""

    def __init__(self, kind: str, name: str, known: Iterable[str]):
        self.kind, self.name = kind, name
        self.suggestions = closest_names(name, known)
        hint = f" Did you mean: {', '.join(self.suggestions)}?" if self.suggestions else ""
        super().__init__(f"Unknown {kind} {name!r}.{hint}")

    def __str__(self) -> str:  # KeyError would quote the message
        return self.args[0]


class UnknownEnvError(UnknownNameError):
    """An environment id that nothing registered."""

    def __init__(self, env_id: str, known: Iterable[str]):
        super().__init__("environment id", env_id, known)
        self.args = (self.args[0] + " Run `gem envs` to list the registered ids.",)


class DuplicateRegistrationError(GemError):
    """Two sources registered the same name."""

    def __init__(self, kind: str, name: str, first_source: str, second_source: str):
        self.kind, self.name = kind, name
        self.first_source, self.second_source = first_source, second_source
        super().__init__(
            f"{kind.capitalize()} {name!r} is registered twice: "
            f"first by {first_source}, again by {second_source}."
        )


#: Constructor keywords of gem-llm's environments that mean nothing here, and what to do instead.
GEM_LLM_KEYWORDS = {
    "seed": "seed an episode with reset(seed=...)",
    "verbose": "environments here print nothing; use logging",
    "max_workers": "grading and sandboxes size their own worker pools",
    "sandbox_type": "code always runs in a bubblewrap sandbox",
    "load_from_cache_file": "datasets are cached by Hugging Face datasets as it always does",
}


class EnvArgumentError(GemError, TypeError):
    """A keyword that the environment's constructor does not accept."""

    def __init__(self, env_id: str, unknown: Iterable[str], accepted: dict[str, object]):
        self.unknown = sorted(unknown)
        listing = ", ".join(
            name if default is NO_DEFAULT else f"{name}={default!r}"
            for name, default in accepted.items()
        )
        reasons = "".join(f" {name!r} is gem-llm's: {GEM_LLM_KEYWORDS[name]}."
                          for name in self.unknown if name in GEM_LLM_KEYWORDS)
        super().__init__(
            f"{env_id} does not accept {', '.join(map(repr, self.unknown))}.{reasons} "
            f"Accepted parameters: {listing or '(none)'}."
        )


class InvalidRegistrationError(GemError, ValueError):
    """A registration with a malformed id or entry point."""


class PluginError(GemError):
    """A plugin that failed to import or to register."""


class DataNotFoundError(GemError, FileNotFoundError):
    """A dataset-backed environment whose data is neither cached nor reachable."""


class MissingDependencyError(GemError, ImportError):
    """An optional dependency that a feature needs is not installed."""

    def __init__(self, feature: str, module: str, extra: str):
        self.module, self.extra = module, extra
        super().__init__(
            f"{feature} needs the Python module {module!r}. "
            f"Install it with: pip install 'gem-adapters[{extra}]'"
        )

    @classmethod
    def require(cls, module: str, *, feature: str, extra: str) -> Any:
        """Import the optional module ``module`` (dotted names too), or raise this error."""
        import importlib

        try:
            return importlib.import_module(module)
        except ImportError:
            raise cls(feature, module.split(".")[0], extra) from None


class SingleAgentRequiredError(GemError, TypeError):
    """A multi-agent environment was given to code that takes a single-agent ``Env`` (a wrapper,
    a vector environment, ``check_env``, ``gem train``/``gem eval``): give it a single-agent view
    (``self_play``, ``versus``) instead."""


class EnvironmentFailure(GemError):
    """Raised by an environment whose own machinery failed, not the agent: the episode it was
    playing ends failed (:class:`gem_core.episodes.Failure`) of kind :attr:`failure_kind`, and
    leaves training. Any other exception an environment raises fails the episode as ``"error"``."""

    failure_kind = "error"


class SandboxFailure(EnvironmentFailure):
    """A sandbox or container that an environment runs died, or could not start."""

    failure_kind = "sandbox"


class MalformedResultError(EnvironmentFailure, TypeError):
    """An environment returned something that is not a transition: a step result of the wrong
    shape or types, or a reward that is not a finite number."""

    failure_kind = "malformed"


class _NoDefault:
    def __repr__(self) -> str:
        return "<required>"


NO_DEFAULT = _NoDefault()


def closest_names(name: str, known: Iterable[str], n: int = 3) -> list[str]:
    """The registered names most similar to ``name``, best first (case-insensitive)."""
    import difflib  # only when a name is unknown: not at every import

    known = list(known)
    by_lower = {k.lower(): k for k in known}
    matches = difflib.get_close_matches(name.lower(), list(by_lower), n=n, cutoff=0.6)
    if not matches:  # a bare name without its category or variant still finds its relatives
        needle = name.lower().split(":")[-1].split("-")[0]
        matches = [k for k in by_lower if needle and needle in k][:n]
    return [by_lower[m] for m in matches]


def option_of(name: str, renamed: Mapping[str, str] | None = None) -> str:
    """The command-line option of a settings field: ``--field-name``, unless ``renamed`` names it."""
    return (renamed or {}).get(name) or "--" + name.replace("_", "-")


def require_at_least_one(settings: object, names: Iterable[str], renamed: Mapping[str, str] | None = None) -> None:
    """Raise a :class:`GemError` naming the option (see :func:`option_of`) of the first field of
    ``settings`` among ``names`` whose value is below 1."""
    for name in names:
        value = getattr(settings, name)
        if value < 1:
            raise GemError(f"{option_of(name, renamed)} must be at least 1, got {value}.")
