"""The openrlhf adapter's modules took the names every adapter uses; the former names still import them."""

from tests.adapters.moved import assert_moved


def test_former_module_names_import_the_renamed_modules():
    assert_moved({
        "gem_adapters.openrlhf.agent": "gem_adapters.openrlhf.rollout",
        "gem_adapters.openrlhf.estimators": "gem_adapters.openrlhf.advantages",
    })


def test_an_agent_file_written_before_loads_through_openrlhf(tmp_path):
    from openrlhf.trainer.ray.vllm_engine import _load_agent_executor

    from gem_adapters.openrlhf.rollout import GemAgentExecutor
    from tests.adapters.openrlhf.test_rollout import agent_file

    path = agent_file(tmp_path, max_turns=3)
    text = path.read_text()
    assert "from gem_adapters.openrlhf.rollout import agent_executor" in text  # what is written now
    path.write_text(text.replace("gem_adapters.openrlhf.rollout", "gem_adapters.openrlhf.agent"))
    executor = _load_agent_executor(str(path))
    assert isinstance(executor, GemAgentExecutor) and executor.options.max_turns == 3
