"""Sampling responses from a local model, as a policy for vector environments.

A :class:`LocalPolicy` takes a batch of prompts (observations already rendered through the
tokenizer's chat template, as the ``concat_chat`` wrapper makes them) and returns the sampled
responses as text. It keeps the exact token ids it sampled, so training scores the very tokens the
model produced rather than a re-tokenisation of their text.

Text prompts are sampled by :class:`~gem_trainer.decoding.cached_decoder.CachedDecoder`, which keeps
the keys and values of what the model has read: the next turn of an episode reads only its new
observation, and a prefix many prompts share is read once. The cache is emptied whenever the
weights change (:meth:`LocalPolicy.set_model`). On CUDA the decoder keeps the sampled tokens on
the GPU and replays each decoding step as a captured CUDA graph.

A vision-language model gets a prompt's images (``info["images"]``, one per image placeholder
the chat template rendered) through its processor; such prompts are generated one at a time with
transformers' ``generate``, and the processor's image inputs are kept with the sampled ids for
training. So are the prompts of models whose layers do not all keep a full key/value cache
(sliding-window attention, recurrent layers).
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple


class Sampled(NamedTuple):
    """What a prompt became: its token ids, the response's, and a vision-language model's image
    inputs (``pixel_values`` and the like; None without images)."""

    prompt_ids: list[int]
    response_ids: list[int]
    vision: dict[str, Any] | None = None


@dataclass(frozen=True)
class SamplingSettings:
    """How responses are sampled. ``temperature == 0`` means greedy decoding."""

    max_new_tokens: int = 64
    temperature: float = 1.0
    top_p: float = 1.0
    max_prompt_tokens: int = 1024
    batch_size: int = 32  # prompts generated together

    @property
    def cached_tokens(self) -> int:
        """How many tokens the prefix cache keeps: two sampling batches' worth."""
        return 2 * self.batch_size * (self.max_prompt_tokens + self.max_new_tokens)


class LocalPolicy:
    """Samples one response per prompt from ``model``; callable on a list of prompts.

    A prompt longer than ``max_prompt_tokens`` gets an empty response (environments treat it as
    a format error, which ends the episode) and is not recorded for training.
    """

    def __init__(self, model: Any, tokenizer: Any, settings: SamplingSettings, *, record: bool = True,
                 processor: Any = None):
        from gem_trainer.decoding.prefix_cache import PrefixCache

        self.tokenizer = tokenizer
        self.processor = processor  # a vision-language model's (images to model inputs)
        self.settings = settings
        self.record = record  # keep sampled token ids for training (see take_sampled)
        self.stop_ids = _stop_token_ids(model, tokenizer)
        self.prefix_cache = PrefixCache(settings.cached_tokens)
        self.model: Any = None
        self.decoder: Any = None
        self.set_model(model)
        self._sampled: dict[tuple[str, str], list[Sampled]] = defaultdict(list)
        self.generated_tokens = 0
        self.generation_seconds = 0.0

    def set_model(self, model: Any) -> None:
        """Sample from ``model`` from now on (call it whenever the weights change: the keys and
        values cached for the old weights are dropped). The same model object with its weights
        changed in place keeps its decoder, whose captured CUDA graphs read the weights where
        they are."""
        from gem_trainer.decoding.cached_decoder import CachedDecoder, supports_cached_decoding

        self.prefix_cache.clear()
        if model is self.model and self.decoder is not None:
            return
        self.model = model
        self.decoder = None
        if self.processor is None and supports_cached_decoding(model):
            self.decoder = CachedDecoder(model, self.prefix_cache, stop_ids=self.stop_ids,
                                         pad_id=self.tokenizer.pad_token_id)

    def __call__(self, prompts: list[str], infos: list[dict[str, Any]] | None = None,
                 seeds: list[int] | None = None) -> list[str]:
        """A response per prompt; ``infos`` carry a visual task's images, ``seeds`` (one per
        prompt) sample each prompt from a generator of its own (see :meth:`generate`)."""
        actions = [""] * len(prompts)
        for positions, texts in self.stream_actions(prompts, infos, seeds):
            for position, text in zip(positions, texts):
                actions[position] = text
        return actions

    def stream_actions(self, prompts: list[str], infos: list[dict[str, Any]] | None = None,
               seeds: list[int] | None = None) -> Iterator[tuple[list[int], list[str]]]:
        """The responses :meth:`__call__` returns, handed over as ``(positions, texts)`` as they
        are sampled: on a GPU the rows that finish early come first, and ``collect_episodes``
        steps their environments while the GPU samples the rest."""
        images = [list((info or {}).get("images") or []) for info in infos] if infos else [[] for _ in prompts]
        if any(images) and self.processor is None:
            from gem_core.errors import GemError

            raise GemError("A visual task showed images, but the model has no image processor: train or "
                           "evaluate a vision-language model folder (one saved with its processor).")
        encoded: list[list[int]] = []
        vision: list[dict[str, Any] | None] = []
        for prompt, shown in zip(prompts, images):
            ids, inputs = self.encode(prompt, shown)
            encoded.append(ids)
            vision.append(inputs)
        todo = [i for i, ids in enumerate(encoded) if len(ids) <= self.settings.max_prompt_tokens]
        if len(todo) < len(prompts):  # over-long: an empty answer, nothing sampled
            over = sorted(set(range(len(prompts))) - set(todo))
            yield over, [""] * len(over)
        size = max(1, self.settings.batch_size)
        plain = [i for i in todo if vision[i] is None]
        chunks = [plain[start:start + size] for start in range(0, len(plain), size)]
        chunks += [[i] for i in todo if vision[i] is not None]  # images: one prompt at a time
        for chunk in chunks:
            chunk_seeds = [seeds[i] for i in chunk] if seeds is not None else None
            for rows, responses in self.generate_stream([encoded[i] for i in chunk], vision[chunk[0]], seeds=chunk_seeds):
                texts = []
                for row, response in zip(rows, responses):
                    i = chunk[row]
                    texts.append(self.tokenizer.decode(response, skip_special_tokens=True))
                    if self.record:
                        self._sampled[(prompts[i], texts[-1])].append(Sampled(encoded[i], response, vision[i]))
                yield [chunk[row] for row in rows], texts

    def encode(self, prompt: str, images: list[Any]) -> tuple[list[int], dict[str, Any] | None]:
        """A prompt's token ids, and with images the processor's image inputs (the placeholders
        expanded into the model's image tokens)."""
        if not images:
            return self.tokenizer.encode(prompt, add_special_tokens=False), None
        inputs = self.processor(text=[prompt], images=[images], return_tensors="pt", add_special_tokens=False)
        ids = inputs.pop("input_ids")[0].tolist()
        inputs.pop("attention_mask", None)
        return ids, dict(inputs)

    def generate(self, prompts: list[list[int]], vision: dict[str, Any] | None = None, *,
                 seeds: list[int] | None = None) -> list[list[int]]:
        """Sample a response (token ids, ending with a stop token unless cut off by
        ``max_new_tokens``) for each tokenised prompt; ``vision``: the image inputs of a single
        prompt. With ``seeds`` (one per prompt), each response depends only on its prompt and
        seed, not on the rest of the batch or on torch's generator."""
        responses: list[list[int]] = [[] for _ in prompts]
        for rows, sampled in self.generate_stream(prompts, vision, seeds=seeds):
            for row, response in zip(rows, sampled):
                responses[row] = response
        return responses

    def generate_stream(self, prompts: list[list[int]], vision: dict[str, Any] | None = None, *,
                        seeds: list[int] | None = None) -> Iterator[tuple[list[int], list[list[int]]]]:
        """:meth:`generate`, handing the responses over as ``(rows, responses)`` parts as they
        are ready; counts the time spent sampling (not the caller's between parts) and the tokens
        sampled."""
        if not prompts:
            return
        was_training = self.model.training
        self.model.eval()
        try:
            if self.decoder is not None and vision is None:
                s = self.settings
                parts = self.decoder.stream(prompts, max_new_tokens=s.max_new_tokens, temperature=s.temperature,
                                            top_p=s.top_p, seeds=seeds)
            elif seeds is not None and self.settings.temperature > 0:  # generate draws from torch's generator
                parts = _at_once(lambda: [self._seeded_generate(prompt, vision, seed) for prompt, seed in zip(prompts, seeds)])
            else:
                parts = _at_once(lambda: self._generate_with_transformers(prompts, vision))
            while True:
                started = time.perf_counter()
                part = next(parts, None)
                self.generation_seconds += time.perf_counter() - started
                if part is None:
                    return
                self.generated_tokens += sum(len(r) for r in part[1])
                yield part
        finally:
            self.model.train(was_training)

    def _seeded_generate(self, prompt: list[int], vision: dict[str, Any] | None, seed: int) -> list[int]:
        """One prompt through ``generate`` with torch's generator seeded for it, then put back."""
        import torch

        device = next(self.model.parameters()).device
        with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
            torch.manual_seed(seed)
            return self._generate_with_transformers([prompt], vision)[0]

    def _generate_with_transformers(self, prompts: list[list[int]], vision: dict[str, Any] | None) -> list[list[int]]:
        """transformers' ``generate`` on the left-padded prompts (images, or models without a
        full key/value cache)."""
        import torch

        pad = self.tokenizer.pad_token_id
        width = max(len(p) for p in prompts)
        input_ids = torch.full((len(prompts), width), pad, dtype=torch.long)
        attention = torch.zeros_like(input_ids)
        for row, ids in enumerate(prompts):
            input_ids[row, width - len(ids):] = torch.tensor(ids, dtype=torch.long)
            attention[row, width - len(ids):] = 1
        device = next(self.model.parameters()).device
        s = self.settings
        options: dict[str, Any] = {"max_new_tokens": s.max_new_tokens, "pad_token_id": pad,
                                   "eos_token_id": sorted(self.stop_ids)}
        if s.temperature > 0:
            options.update(do_sample=True, temperature=s.temperature, top_p=s.top_p, top_k=0)
        else:
            options.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        with torch.inference_mode():
            extra = {key: value.to(device) for key, value in (vision or {}).items()}
            out = self.model.generate(input_ids=input_ids.to(device), attention_mask=attention.to(device),
                                      **extra, **options)
        responses = []
        for row in out[:, width:].tolist():
            response = []
            for token in row:
                response.append(token)
                if token in self.stop_ids:
                    break
            responses.append(response)
        return responses

    def take_sampled(self, prompt: str, action: str) -> Sampled | None:
        """The token ids (and image inputs) behind a (prompt, action) pair this policy produced,
        each handed out once; None when the prompt was over-long (no tokens were sampled)."""
        found = self._sampled.get((prompt, action))
        if not found:
            return None
        ids = found.pop(0)
        if not found:
            del self._sampled[(prompt, action)]
        return ids

    def reset_records(self, keep: Iterable[tuple[str, str]] = ()) -> None:
        """Forget sampled ids and counters (call once per rollout batch), except the sampled ids
        of the ``(prompt, action)`` pairs in ``keep``: the turns of episodes that go on into the
        next batch (a collection's ``carry_over``)."""
        kept = {pair: self._sampled[pair] for pair in set(keep) if pair in self._sampled}
        self._sampled = defaultdict(list, kept)
        self.generated_tokens = 0
        self.generation_seconds = 0.0


def _at_once(responses: Callable[[], list[list[int]]]) -> Iterator[tuple[list[int], list[list[int]]]]:
    """All of ``responses()`` as one part, computed when the part is asked for."""
    sampled = responses()
    yield list(range(len(sampled))), sampled


def _stop_token_ids(model: Any, tokenizer: Any) -> set[int]:
    ids: set[int] = set()
    config = getattr(model, "generation_config", None)
    eos = getattr(config, "eos_token_id", None)
    if isinstance(eos, int):
        ids.add(eos)
    elif eos:
        ids.update(eos)
    if tokenizer.eos_token_id is not None:
        ids.add(tokenizer.eos_token_id)
    return ids
