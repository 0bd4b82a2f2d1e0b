"""The LLM judge against a stub OpenAI-compatible server that gives fixed answers, failures and
delays: what it asks, what it scores, its fallback and fault flag, its cache, and judges that run
at the same time."""

from __future__ import annotations

import asyncio
import time

import pytest

import gem_core
from gem_core.endpoint import ChatEndpoint, EndpointError
from gem_core.episodes import Episode, Turn
from gem_core.rubrics import Criterion, Judge, JudgeCache, Rubric, judge
from tests.helpers import free_port
from tests.openai_servers import StubChatServer
from tests.rubrics.guessing import ENV, GUESSES, play

RUBRIC = "The agent halves the range with each guess."


def judged(server: StubChatServer, **options):
    """The environment under a judge wrapper that asks ``server``."""
    settings = {"model": server.model, "base_url": server.base_url, "cache": False, **options}
    return judge(gem_core.make(ENV), RUBRIC, **settings)


def test_the_judge_reads_the_rubric_and_the_episode_and_scores_it_on_the_last_step(stub_chat_server):
    stub_chat_server.answer = lambda body: "The guesses go up one by one.\nSCORE: 3"
    steps = play(judged(stub_chat_server, weight=2.0, env_weight=0.0))
    assert [reward for _, reward, *_ in steps] == [0.0] * (len(steps) - 1) + [pytest.approx(0.6)]
    assert all("judge_fault" not in info for *_, info in steps[:-1])
    info = steps[-1][4]
    assert info["judge_fault"] is False
    assert info["rubric"]["parts"]["judge"] == {"score": pytest.approx(0.3), "weight": 2.0, "cached": False,
                                                "text": "The guesses go up one by one.\nSCORE: 3", "fault": None}
    request, = stub_chat_server.requests
    assert request["model"] == "stub-judge" and request["temperature"] == 0.0 and request["max_tokens"] == 512
    system, user = request["messages"]
    assert system["role"] == "system" and "SCORE: N" in system["content"] and "0" in system["content"]
    assert user["content"].startswith(f"RUBRIC\n{RUBRIC}\n\nTRANSCRIPT\n[environment]\nLet's play Guess The Number.")
    for action in GUESSES[:len(steps)]:
        assert f"[agent]\n{action}" in user["content"]
    assert user["content"].count("[agent]") == len(steps)
    assert steps[-1][0] in user["content"]  # the episode's last observation


def test_a_turn_judge_scores_every_step_on_that_turn_alone(stub_chat_server):
    stub_chat_server.answer = lambda body: "SCORE: 5"
    steps = play(judged(stub_chat_server, scope="turn", env_weight=0.0))
    assert [reward for _, reward, *_ in steps] == [pytest.approx(0.5)] * len(steps)
    assert len(stub_chat_server.requests) == len(steps)
    for number, request in enumerate(stub_chat_server.requests):
        transcript = request["messages"][1]["content"]
        assert transcript.count("[agent]") == 1 and f"[agent]\n{GUESSES[number]}" in transcript


@pytest.mark.parametrize(("answer", "kind"), [("The agent did fine.", "unparseable"), ("SCORE: 12", "out_of_range"),
                                              ("", "unparseable")])
def test_a_nonsense_answer_scores_the_fallback_and_flags_a_fault(stub_chat_server, answer, kind):
    stub_chat_server.answer = lambda body: answer
    plain = play(gem_core.make(ENV))
    steps = play(judged(stub_chat_server, fallback=-0.5))
    assert steps[-1][1] == pytest.approx(plain[-1][1] - 0.5)  # the environment's reward, plus the fallback
    info = steps[-1][4]
    part = info["rubric"]["parts"]["judge"]
    assert info["judge_fault"] is True and part["score"] == -0.5 and part["text"] == answer
    assert part["fault"]["kind"] == kind


@pytest.mark.timeout(60)
def test_a_failing_server_is_retried_then_scores_the_fallback(stub_chat_server):
    stub_chat_server.answer = lambda body: (500, {"error": {"message": "the judge fell over"}})
    steps = play(judged(stub_chat_server, max_retries=2))
    fault = steps[-1][4]["rubric"]["parts"]["judge"]["fault"]
    assert steps[-1][4]["judge_fault"] is True and fault["kind"] == "refused"
    assert "HTTP 500" in fault["message"] and "the judge fell over" in fault["message"]
    assert len(stub_chat_server.requests) == 3  # the first try and two retries


@pytest.mark.timeout(60)
def test_a_judge_that_cannot_be_reached_or_answers_too_late_scores_the_fallback():
    unreachable = judge(gem_core.make(ENV), RUBRIC, model="m", base_url=f"http://127.0.0.1:{free_port()}/v1",
                        max_retries=0, cache=False)
    fault = play(unreachable)[-1][4]["rubric"]["parts"]["judge"]["fault"]
    assert fault["kind"] == "unreachable" and "Cannot reach" in fault["message"]
    with StubChatServer(delay=3.0) as slow:
        started = time.monotonic()
        steps = play(judged(slow, timeout=0.5, max_retries=1))
        assert time.monotonic() - started < 3.0 * 2
    fault = steps[-1][4]["rubric"]["parts"]["judge"]["fault"]
    assert fault["kind"] == "timeout" and "within 0.5 s" in fault["message"]
    assert len(slow.requests) == 2


def test_the_same_episode_is_judged_once_and_a_failed_judgement_is_asked_again(stub_chat_server):
    answers = iter(["no score here", "SCORE: 6", "SCORE: 2"])
    stub_chat_server.answer = lambda body: next(answers)
    env = judged(stub_chat_server, cache=JudgeCache())
    failed, first, again = (play(env)[-1][4]["rubric"]["parts"]["judge"] for _ in range(3))
    assert failed["fault"]["kind"] == "unparseable"
    assert first == {**again, "cached": False} and again["cached"] is True and again["score"] == pytest.approx(0.6)
    assert len(stub_chat_server.requests) == 2
    other = play(env, actions=["\\boxed{5}", *GUESSES])[-1][4]["rubric"]["parts"]["judge"]  # another episode
    assert other["score"] == pytest.approx(0.2) and other["cached"] is False


def test_judgements_kept_in_a_file_outlive_the_cache_that_wrote_them(stub_chat_server, tmp_path):
    stub_chat_server.answer = lambda body: "SCORE: 9"
    path = tmp_path / "judgements.sqlite"
    first = play(judged(stub_chat_server, cache=JudgeCache(path)))[-1][4]["rubric"]["parts"]["judge"]
    second = play(judged(stub_chat_server, cache=JudgeCache(path)))[-1][4]["rubric"]["parts"]["judge"]
    assert len(stub_chat_server.requests) == 1 and len(JudgeCache(path)) == 1
    assert second == {**first, "cached": True}
    changed = play(judged(stub_chat_server, cache=JudgeCache(path), max_score=5))[-1][4]["rubric"]["parts"]["judge"]
    assert changed["cached"] is False and len(stub_chat_server.requests) == 2  # another scale, another question


@pytest.mark.timeout(120)
def test_judges_of_concurrent_episodes_ask_at_the_same_time(stub_chat_server):
    stub_chat_server.delay = 0.3
    options = {"rubric": RUBRIC, "model": stub_chat_server.model, "base_url": stub_chat_server.base_url,
               "cache": False, "scope": "turn"}
    with gem_core.make_vec(ENV, num_envs=4, wrappers=[("judge", options)], mode="async") as vec:
        episodes = gem_core.collect_episodes(vec, lambda observations: ["\\boxed{5}"] * len(observations),
                                             num_episodes=4)
    assert len(episodes) == 4 and all(t.info["judge_fault"] is False for e in episodes for t in e.turns)
    assert stub_chat_server.max_in_flight >= 2


@pytest.mark.timeout(60)
def test_the_async_path_asks_every_judge_of_a_step_together(stub_chat_server):
    stub_chat_server.delay = 0.5
    stub_chat_server.answer = lambda body: "SCORE: 10" if "RUBRIC\nBe brief." in body["messages"][1]["content"] \
        else "SCORE: 0"
    endpoint = {"model": stub_chat_server.model, "base_url": stub_chat_server.base_url, "cache": False}
    rubric = Rubric([Criterion("brief", Judge("Be brief.", **endpoint), 1.0, "turn"),
                     Criterion("kind", Judge("Be kind.", **endpoint), 1.0, "turn"),
                     Criterion("length", lambda turn: len(turn.action), 0.1, "turn")])
    env = gem_core.rubrics.RubricWrapper(gem_core.make(ENV), rubric, env_weight=0.0)

    async def one_step():
        await env.areset(seed=0)
        return await env.astep("\\boxed{5}")

    _, reward, *_, info = asyncio.run(one_step())
    assert reward == pytest.approx(1.0 + 0.0 + 0.1 * len("\\boxed{5}"))
    assert {name: part["score"] for name, part in info["rubric"]["parts"].items()} == \
        {"brief": 1.0, "kind": 0.0, "length": len("\\boxed{5}")}
    assert stub_chat_server.max_in_flight == 2


def test_a_judge_scores_turns_and_episodes_written_by_hand(stub_chat_server):
    stub_chat_server.answer = lambda body: "SCORE: 4"
    judge_model = Judge("Answer in French.", model=stub_chat_server.model, base_url=stub_chat_server.base_url,
                        cache=False, max_chars=100)
    long_answer = "x" * 1000
    judgement = judge_model(Episode("mine:Essay-v0", 0, [Turn("Write an essay.", long_answer, 0.0)], "Thanks."))
    assert judgement.score == pytest.approx(0.4) and judgement.fault is None and judgement.cached is False
    transcript = stub_chat_server.requests[-1]["messages"][1]["content"]
    assert "[... 900 characters cut ...]" in transcript and transcript.endswith("(0 to 10).")
    assert asyncio.run(judge_model.ajudge(Turn("Say hi.", "Salut !", 0.0))).score == pytest.approx(0.4)


def test_endpoint_errors_name_their_kind(stub_chat_server):
    stub_chat_server.answer = lambda body: (401, {"error": {"message": "bad key"}})
    endpoint = ChatEndpoint("m", base_url=stub_chat_server.base_url, api_key_env="GEM_TEST_NO_SUCH_KEY")
    with pytest.raises(EndpointError, match="rejected the API key.*GEM_TEST_NO_SUCH_KEY") as caught:
        endpoint.complete([{"role": "user", "content": "hi"}])
    assert caught.value.kind == "refused"
