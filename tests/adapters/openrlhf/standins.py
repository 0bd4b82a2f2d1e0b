"""Import stand-ins (see :mod:`tests.adapters.standins`) for the GPU-only modules OpenRLHF imports
at module level but the tested paths never call: ``flash_attn`` (imported by
``openrlhf.models.ring_attn_utils``, which the experience maker imports; used only with packed
samples on GPU) and ``vllm`` (imported by OpenRLHF's vLLM engine module, whose
``_load_agent_executor`` the tests use, and by its samples generator; model generation is the
scripted engine's job here)."""

from __future__ import annotations

from tests.adapters import standins

MODULES = ("flash_attn", "flash_attn.bert_padding", "flash_attn.utils", "flash_attn.utils.distributed",
           "vllm", "vllm.inputs", "vllm.utils")


def install() -> list[str]:
    """Put the stand-ins into ``sys.modules``; returns the names stood in for."""
    return standins.install(MODULES)
