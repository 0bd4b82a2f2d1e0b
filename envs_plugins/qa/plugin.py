"""Registers the ``qa`` pack: the reference's QA datasets, RuleTaker, and the offline Almanac,
each QA set also with a search tool (``+Search``)."""

import os

from gem_core import hookimpl

_QA = "gem_envs.qa.env:QaEnv"
_ALMANAC = "gem_envs.qa.almanac:AlmanacEnv"

# id -> (Hugging Face dataset, split, question column, answer column)
DATASETS = {
    "qa:NaturalQuestions": ("axon-rl/NaturalQuestions", "train", "problem", "answer"),
    "qa:HotpotQA": ("axon-rl/HotpotQA", "train", "problem", "answer"),
    "eval:QaOpen": ("google-research-datasets/nq_open", "validation", "question", "answer"),
    # The evaluation set of DeepResearcher: 512 questions per source, one split each.
    "eval:2Wiki": ("axon-rl/search-eval", "2wiki", "question", "answer"),
    "eval:PopQA": ("axon-rl/search-eval", "popqa", "question", "answer"),
    "eval:TriviaQA": ("axon-rl/search-eval", "tq", "question", "answer"),
    "eval:HotpotQA": ("axon-rl/search-eval", "hotpotqa", "question", "answer"),
    "eval:Bamboogle": ("axon-rl/search-eval", "bamboogle", "question", "answer"),
    "eval:NaturalQuestions": ("axon-rl/search-eval", "nq", "question", "answer"),
    "eval:Musique": ("axon-rl/search-eval", "musique", "question", "answer"),
}
RULETAKER_DEPTHS = (0, 1, 2, 3, 5)
ALMANAC_CORPUS = os.path.join(os.path.dirname(os.path.realpath(__file__)), "almanac", "corpus.jsonl")
SEARCH_USES = 5  # searches per episode, as in the reference's search presets


def search(**tool_options):
    """The ``+Search`` wrappers: the search tool, no reward for searching itself."""
    tool = ("search", tool_options) if tool_options else "search"
    return (("tool", {"tools": [tool], "max_tool_uses": SEARCH_USES}),)


@hookimpl
def gem_register_envs(register):
    for env_id, (name, split, question, answer) in DATASETS.items():
        evaluation = env_id.startswith("eval:")  # evaluation sets serve their questions in order
        what = f"({name}, {split}{', in order' if evaluation else ''})"
        register(env_id, _QA, offline=False, dataset_name=name, split=split, question_key=question,
                 answer_key=answer, env_id=env_id, shuffle=not evaluation, requires={"datasets": "envs"},
                 description=f"Answer a question in <answer></answer>, scored by exact match {what}.")
        register(f"{env_id}+Search", _QA, offline=False, dataset_name=name, split=split,
                 question_key=question, answer_key=answer, env_id=f"{env_id}+Search", wrappers=search(),
                 shuffle=not evaluation, requires={"datasets": "envs"},
                 description=f"Search (a retrieval server at SEARCH_URL), then answer {what}.")
    for depth in RULETAKER_DEPTHS:
        env_id = f"logic:RuleTaker-d{depth}"
        register(env_id, _QA, offline=False, dataset_name=f"axon-rl/RuleTaker-d{depth}-70k", split="train",
                 question_key="question", answer_key="answer", extract_boxed=True, env_id=env_id,
                 requires={"datasets": "envs"},
                 description=f"Decide what follows from facts and rules (depth {depth}); answer in \\boxed{{}}.")
    register("qa:Almanac-v0", _ALMANAC, env_id="qa:Almanac-v0",
             description="Questions about an invented archipelago, from a corpus shipped with GEM (offline).")
    register("qa:Almanac-v0+Search", _ALMANAC, env_id="qa:Almanac-v0+Search",
             wrappers=search(corpus=ALMANAC_CORPUS, topk=3), requires={"bm25s": "tools"},
             description="Search the Almanac's shipped corpus (BM25), then answer (offline).")


@hookimpl
def gem_register_keys(register):
    register("almanac", "gem_envs.qa:almanac/questions.jsonl", description="The Almanac's questions with their answers.")
