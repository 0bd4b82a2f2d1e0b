"""Cached decoding: the same tokens as transformers' own generate, with each turn reading only its
new tokens, shared openings read once, and a cache that stays within its budget."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
import torch

from gem_trainer.decoding import cached_decoder as decoding
from gem_trainer.decoding.cached_decoder import CachedDecoder, supports_cached_decoding
from gem_trainer.decoding.prefix_cache import CachedPrefix, PrefixCache, common_prefix_length
from gem_trainer.decoding.sampling import LocalPolicy, SamplingSettings
from tests.helpers import REPO


def chat(tokenizer, *turns: str) -> list[int]:
    """A conversation (user, assistant, user, ...) through the chat template, ready for a reply."""
    messages = [{"role": "user" if k % 2 == 0 else "assistant", "content": text} for k, text in enumerate(turns)]
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    return tokenizer.encode(text, add_special_tokens=False)


def reference(model, tokenizer, prompt: list[int], max_new_tokens: int) -> list[int]:
    """transformers' greedy generate on one unpadded prompt, cut after the first stop token."""
    ids = torch.tensor([prompt])
    out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=max_new_tokens,
                         do_sample=False, pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id)
    response = []
    for token in out[0, len(prompt):].tolist():
        response.append(token)
        if token == tokenizer.eos_token_id:
            break
    return response


class CountingModel(torch.nn.Module):
    """Counts the tokens each forward pass reads (rows x columns of input_ids)."""

    def __init__(self, model):
        super().__init__()
        self.inner = model
        self.config = model.config
        self.read: list[int] = []

    def forward(self, input_ids=None, attention_mask=None, position_ids=None, cache=None, past_key_values=None,
                use_cache=None, logits_to_keep=0):
        self.read.append(input_ids.numel())
        options = {"cache": cache} if cache is not None else {"past_key_values": past_key_values}
        return self.inner(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                          use_cache=use_cache, logits_to_keep=logits_to_keep, **options)


@pytest.fixture()
def model_and_tokenizer(tiny):
    """The tiny model's shape with weights drawn wide enough (std 0.2) that its greedy choices
    depend on the context: with the usual 0.02, it says the same token whatever it reads."""
    from transformers import LlamaForCausalLM

    model, tokenizer = tiny
    config = model.config
    config.initializer_range = 0.2
    torch.manual_seed(0)
    lively = LlamaForCausalLM(config).eval()
    assert len({tuple(reference(lively, tokenizer, chat(tokenizer, f"Question {k}"), 4)) for k in range(4)}) > 1
    return lively, tokenizer


def test_greedy_decoding_gives_the_tokens_generate_gives_turn_after_turn(model_and_tokenizer):
    model, tokenizer = model_and_tokenizer
    cache = PrefixCache(100_000)
    decoder = CachedDecoder(model, cache, stop_ids={tokenizer.eos_token_id}, pad_id=tokenizer.pad_token_id)
    prompts = [chat(tokenizer, "Guess a number from 1 to 10."), chat(tokenizer, "Guess a number from 1 to 10."),
               chat(tokenizer, "Hi"), chat(tokenizer, "Name three colours, then a fruit, then stop, please.")]
    first = decoder.sample(prompts, max_new_tokens=7, temperature=0, top_p=1.0)
    assert first == [reference(model, tokenizer, p, 7) for p in prompts]

    # the next turn extends each conversation: only the new tokens are read
    replies = [tokenizer.decode(r, skip_special_tokens=True) for r in first]
    later = [chat(tokenizer, "Guess a number from 1 to 10.", replies[0], "Higher."),
             chat(tokenizer, "Guess a number from 1 to 10.", replies[1], "Lower, and hurry up."),
             chat(tokenizer, "Hi", replies[2], "Hello again"),
             chat(tokenizer, "Name three colours, then a fruit, then stop, please.", replies[3], "Thanks")]
    cached = [cache.longest_prefix(np.asarray(p))[1] for p in later]
    assert all(n > len(p) // 2 for n, p in zip(cached, later))
    second = decoder.sample(later, max_new_tokens=7, temperature=0, top_p=1.0)
    assert second == [reference(model, tokenizer, p, 7) for p in later]


def test_a_turn_reads_only_its_new_tokens_and_a_shared_opening_once(model_and_tokenizer):
    model, tokenizer = model_and_tokenizer
    counting = CountingModel(model)
    decoder = CachedDecoder(counting, PrefixCache(100_000), stop_ids=set(), pad_id=tokenizer.pad_token_id)
    prompt = chat(tokenizer, "Let's play Guess The Number. I am thinking of an integer from 1 to 10.")
    decoder.sample([prompt] * 8, max_new_tokens=3, temperature=1.0, top_p=1.0)
    # the opening once, then 8 rows of one token for each of the three decoding steps
    assert counting.read == [len(prompt) - 1, 8, 8, 8]

    counting.read.clear()
    responses = decoder.sample([prompt], max_new_tokens=3, temperature=0, top_p=1.0)
    extended = prompt + responses[0] + tokenizer.encode("<|im_end|>\n<|im_start|>user\nHigher.<|im_end|>\n"
                                                         "<|im_start|>assistant\n", add_special_tokens=False)
    counting.read.clear()
    decoder.sample([extended], max_new_tokens=1, temperature=0, top_p=1.0)
    new_tokens = len(extended) - len(prompt) - (len(responses[0]) - 1)  # the last sampled token was never read
    assert counting.read == [new_tokens - 1, 1]


def test_sampling_is_reproducible_and_respects_the_limits(model_and_tokenizer):
    model, tokenizer = model_and_tokenizer
    stop = tokenizer.eos_token_id
    prompts = [chat(tokenizer, f"Question {k}") for k in range(5)]

    def run(top_p: float) -> list[list[int]]:
        torch.manual_seed(3)
        decoder = CachedDecoder(model, PrefixCache(100_000), stop_ids={stop}, pad_id=tokenizer.pad_token_id)
        return decoder.sample(prompts, max_new_tokens=6, temperature=1.0, top_p=top_p)

    first = run(1.0)
    assert first == run(1.0)
    assert all(0 < len(r) <= 6 and (len(r) == 6 or r[-1] == stop) for r in first)
    assert stop not in [t for r in first for t in r[:-1]]  # a response ends at its first stop token
    # a nucleus this small keeps only the most likely token: greedy decoding
    assert run(1e-9) == [reference(model, tokenizer, p, 6) for p in prompts]


@pytest.mark.parametrize("top_p", [1.0, 0.9])
def test_a_seeded_prompt_samples_the_same_response_in_any_batch(model_and_tokenizer, top_p):
    model, tokenizer = model_and_tokenizer
    prompts = [chat(tokenizer, f"Question {k}" + " and more" * k) for k in range(6)]
    seeds = [11, 12, 13, 14, 15, 11]

    def sample(rows: list[int], sliding: bool = False) -> list[list[int]]:
        torch.manual_seed(len(rows))  # torch's generator is not what decides
        policy = LocalPolicy(model, tokenizer, SamplingSettings(max_new_tokens=8, temperature=1.5, top_p=top_p))
        if sliding:  # the path through transformers' generate
            policy.decoder = None
        return policy.generate([prompts[r] for r in rows], seeds=[seeds[r] for r in rows])

    whole = sample(list(range(6)))
    assert [sample([r])[0] for r in range(6)] == whole  # alone, each prompt gets the response it got in the batch
    assert sample([4, 1, 3]) == [whole[4], whole[1], whole[3]]
    assert len({tuple(r) for r in whole}) > 1  # and the responses are samples, not all alike
    prompts[5] = prompts[0]
    assert sample([0, 5]) == [whole[0], whole[0]]  # same prompt, same seed: the same response
    assert sample([0, 2], sliding=True) == sample([0], sliding=True) + sample([2], sliding=True)


def test_rows_that_finish_early_leave_the_batch_and_the_rest_decode_on(model_and_tokenizer, monkeypatch):
    model, tokenizer = model_and_tokenizer
    prompts = [chat(tokenizer, f"Question number {k}" + " and more" * k) for k in range(8)]  # rows of different lengths
    expected = [reference(model, tokenizer, p, 9) for p in prompts]
    stops = {expected[0][1], expected[1][2]}  # two rows stop after two and three tokens
    cut = [next((i + 1 for i, t in enumerate(r) if t in stops), len(r)) for r in expected]
    selected: list[int] = []
    select = decoding._Batch.select
    monkeypatch.setattr(decoding._Batch, "select", lambda self, rows: (selected.append(len(rows)), select(self, rows)))
    decoder = CachedDecoder(model, PrefixCache(100_000), stop_ids=stops, pad_id=tokenizer.pad_token_id)
    assert decoder.sample(prompts, max_new_tokens=9, temperature=0, top_p=1.0) == [r[:n] for r, n in zip(expected, cut)]
    assert selected  # the batch shrank


def test_prefix_cache_finds_the_longest_prefix_drops_what_is_extended_and_keeps_its_budget():
    def entry(ids: list[int]) -> CachedPrefix:
        return CachedPrefix(np.asarray(ids), torch.zeros(1, 2, 1, len(ids), 1))

    cache = PrefixCache(max_tokens=10)
    cache.add(entry([1, 2, 3]))
    cache.add(entry([1, 2, 9, 9]))
    found, length = cache.longest_prefix(np.asarray([1, 2, 9, 7]))
    assert found.ids.tolist() == [1, 2, 9, 9] and length == 3
    cache.add(entry([1, 2, 3, 4, 5]))  # extends [1, 2, 3], which goes
    assert len(cache) == 2 and cache.tokens == 9
    cache.add(entry([7, 7, 7]))  # over budget: the least recently used ([1, 2, 9, 9], found above) goes
    assert cache.tokens <= 10
    assert cache.longest_prefix(np.asarray([1, 2, 3, 4, 5, 6]))[1] == 5
    assert cache.longest_prefix(np.asarray([8]))[1] == 0
    assert common_prefix_length(np.asarray([1, 2]), np.asarray([1, 2, 3])) == 2


def test_models_without_a_full_cache_sample_through_transformers(model_and_tokenizer):
    model, tokenizer = model_and_tokenizer
    assert supports_cached_decoding(model)
    model.config.sliding_window, model.config.use_sliding_window = 4, True
    assert not supports_cached_decoding(model)
    policy = LocalPolicy(model, tokenizer, SamplingSettings(max_new_tokens=4, temperature=0))
    assert policy.decoder is None
    prompt = chat(tokenizer, "Hi")
    assert policy.generate([prompt]) == [reference(model, tokenizer, prompt, 4)]


def test_new_weights_empty_the_cache(tiny):
    model, tokenizer = tiny
    policy = LocalPolicy(model, tokenizer, SamplingSettings(max_new_tokens=3, temperature=0))
    policy.generate([chat(tokenizer, "Hi there, how are you today?")])
    assert len(policy.prefix_cache) > 0
    policy.set_model(model)
    assert len(policy.prefix_cache) == 0


def dynamic_cache_decoder() -> type:
    """The decoder that ``gem train`` used before its fixed-shape buffer, kept by the benchmark."""
    spec = importlib.util.spec_from_file_location("_dynamic_cache_decoder",
                                                  REPO / "bench" / "workloads" / "_dynamic_cache_decoder.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.DynamicCacheDecoder


def two_turns(decoder, tokenizer, *, temperature: float, top_p: float, seed: int = 5,
              per_prompt: bool = False) -> list[list[int]]:
    """Responses to a batch of first turns, then to their second turns (which read the cache);
    ``per_prompt``: each prompt sampled with a seed of its own."""
    torch.manual_seed(seed)
    openings = [f"Question number {k}" + " and more" * k for k in range(6)]
    seeds = [seed + k for k in range(6)] if per_prompt else None
    first = decoder.sample([chat(tokenizer, text) for text in openings], max_new_tokens=9,
                           temperature=temperature, top_p=top_p, seeds=seeds)
    replies = [tokenizer.decode(r, skip_special_tokens=True) for r in first]
    later = [chat(tokenizer, text, reply, "Go on.") for text, reply in zip(openings, replies)]
    return first + decoder.sample(later, max_new_tokens=9, temperature=temperature, top_p=top_p, seeds=seeds)


@pytest.mark.parametrize("temperature, top_p, per_prompt", [(0, 1.0, False), (0.5, 1.0, False), (0.5, 0.8, False),
                                                            (0.5, 0.8, True)],
                         ids=["greedy", "seeded", "nucleus", "a seed per prompt"])
def test_the_buffer_decoder_gives_the_tokens_the_dynamic_cache_decoder_gave(model_and_tokenizer, temperature, top_p,
                                                                          per_prompt):
    """Both compute the same logits up to float rounding (about 1e-6 here: their attention reads
    differently padded rows), and draw the same random numbers. At temperature 1 this random
    model's next-token distribution is nearly uniform over 49k tokens, where rounding can reorder
    near-equal probabilities; at 0.5 it decides no draw."""
    model, tokenizer = model_and_tokenizer
    before_type = dynamic_cache_decoder()

    def run(decoder_type, stops: set[int]) -> list[list[int]]:
        decoder = decoder_type(model, PrefixCache(100_000), stop_ids=stops, pad_id=tokenizer.pad_token_id)
        return two_turns(decoder, tokenizer, temperature=temperature, top_p=top_p, per_prompt=per_prompt)

    unstopped = run(before_type, set())
    stops = {unstopped[0][1], unstopped[1][2]}  # the same draws make rows 0 and 1 finish early and leave
    before = run(before_type, stops)
    assert any(len(r) < 9 for r in before) and any(len(r) == 9 for r in before)
    assert run(CachedDecoder, stops) == before


def test_the_device_loop_gives_the_host_loops_tokens(model_and_tokenizer):
    model, tokenizer = model_and_tokenizer
    greedy = [reference(model, tokenizer, chat(tokenizer, f"Question number {k}" + " and more" * k), 9) for k in range(6)]
    stops = {greedy[0][1], greedy[1][2]}

    def run(device_loop: bool, stop_ids: set[int], temperature: float, per_prompt: bool = False) -> list[list[int]]:
        decoder = CachedDecoder(model, PrefixCache(100_000), stop_ids=stop_ids, pad_id=tokenizer.pad_token_id,
                                device_loop=device_loop)
        return two_turns(decoder, tokenizer, temperature=temperature, top_p=1.0, per_prompt=per_prompt)

    # greedy, rows finishing early: the device loop keeps them in the batch and cuts their tokens after
    assert run(True, stops, 0) == run(False, stops, 0)
    # sampled, no row finishing early (the host loop drops none): the same random draws, the same tokens
    assert run(True, set(), 1.0) == run(False, set(), 1.0)
    # a seed per prompt: each row draws from its own generator, whichever rows stay in the batch
    assert run(True, stops, 1.0, per_prompt=True) == run(False, stops, 1.0, per_prompt=True)


def test_a_captured_shape_is_rounded_up_captured_once_and_refilled(model_and_tokenizer, monkeypatch):
    """What CUDA graphs change, run on the CPU: the step is captured (here: run for its warm-up,
    which really runs it, before any data is loaded) once per rounded-up shape, then replayed on
    data loaded into the same tensors, with rows past the batch's own decoding padding."""
    from gem_trainer.decoding import cuda_graphs

    model, tokenizer = model_and_tokenizer
    captured = []

    def capture(step):
        captured.append(step)
        for _ in range(cuda_graphs.WARMUP_RUNS):
            step()
        return step

    monkeypatch.setattr(cuda_graphs, "capture", capture)
    greedy = [reference(model, tokenizer, chat(tokenizer, f"Question number {k}" + " and more" * k), 9) for k in range(6)]
    stops = {greedy[0][1], greedy[1][2]}
    host = CachedDecoder(model, PrefixCache(100_000), stop_ids=stops, pad_id=tokenizer.pad_token_id)
    graphed = CachedDecoder(model, PrefixCache(100_000), stop_ids=stops, pad_id=tokenizer.pad_token_id, device_loop=True)
    graphed.cuda_graphs = True  # on the CPU: the stand-in capture above
    assert two_turns(graphed, tokenizer, temperature=0, top_p=1.0) == two_turns(host, tokenizer, temperature=0, top_p=1.0)
    assert [key[:2] for key in graphed._captured] == [(8, 256)]  # 6 rows -> 8, both turns in 256 columns
    assert len(captured) == 1
    # fewer rows fit the captured shape; a longer conversation needs more columns
    three = [chat(tokenizer, f"Row {k}") for k in range(3)]
    assert graphed.sample(three, max_new_tokens=9, temperature=0, top_p=1.0) == \
        host.sample(three, max_new_tokens=9, temperature=0, top_p=1.0)
    assert len(captured) == 1
    long = [chat(tokenizer, "word " * 300 + str(k)) for k in range(7)]
    assert graphed.sample(long[:2], max_new_tokens=9, temperature=0, top_p=1.0) == \
        host.sample(long[:2], max_new_tokens=9, temperature=0, top_p=1.0)
    assert [key[:2] for key in graphed._captured] == [(8, 256), (2, 512)] and len(captured) == 2
    # a shape that covers those captured before replaces them
    assert graphed.sample(long, max_new_tokens=9, temperature=0, top_p=1.0) == \
        host.sample(long, max_new_tokens=9, temperature=0, top_p=1.0)
    assert [key[:2] for key in graphed._captured] == [(8, 512)] and len(captured) == 3
    assert graphed.sample(three, max_new_tokens=9, temperature=0, top_p=1.0) == \
        host.sample(three, max_new_tokens=9, temperature=0, top_p=1.0)
    assert len(captured) == 3


def test_the_device_loop_hands_rows_over_as_they_finish(model_and_tokenizer, monkeypatch):
    model, tokenizer = model_and_tokenizer
    monkeypatch.setattr(decoding, "CHECK_EVERY", 2)
    prompts = [chat(tokenizer, f"Question number {k}" + " and more" * k) for k in range(8)]
    greedy = [reference(model, tokenizer, p, 9) for p in prompts]
    stops = {greedy[0][1], greedy[1][4]}  # rows finishing after 2 and 5 tokens (and others where these come)
    expected = [r[:next((i + 1 for i, t in enumerate(r) if t in stops), len(r))] for r in greedy]
    decoder = CachedDecoder(model, PrefixCache(100_000), stop_ids=stops, pad_id=tokenizer.pad_token_id, device_loop=True)
    parts = list(decoder.stream(prompts, max_new_tokens=9, temperature=0, top_p=1.0))
    assert len(parts) > 1 and 0 in parts[0][0]  # row 0 finished at the first look, before the others
    assert sorted(i for indices, _ in parts for i in indices) == list(range(8))
    assert {i: r for indices, responses in parts for i, r in zip(indices, responses)} == dict(enumerate(expected))
    assert not torch.is_inference_mode_enabled()  # only while the decoder works


def test_a_step_that_cannot_be_captured_decodes_uncaptured_and_says_so(model_and_tokenizer, monkeypatch):
    from gem_trainer.decoding import cuda_graphs

    model, tokenizer = model_and_tokenizer

    def capture(step):
        raise RuntimeError("operation not permitted when stream is capturing")

    monkeypatch.setattr(cuda_graphs, "capture", capture)
    prompts = [chat(tokenizer, f"Row {k}") for k in range(3)]
    host = CachedDecoder(model, PrefixCache(100_000), stop_ids=set(), pad_id=tokenizer.pad_token_id)
    graphed = CachedDecoder(model, PrefixCache(100_000), stop_ids=set(), pad_id=tokenizer.pad_token_id, device_loop=True)
    graphed.cuda_graphs = True  # on the CPU: the stand-in capture above, which fails
    with pytest.warns(RuntimeWarning, match="decodes uncaptured"):
        got = graphed.sample(prompts, max_new_tokens=5, temperature=0, top_p=1.0)
    assert got == host.sample(prompts, max_new_tokens=5, temperature=0, top_p=1.0)
    assert not graphed.cuda_graphs and not graphed._captured
