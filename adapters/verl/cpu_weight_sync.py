"""Weight copies into vLLM's CPU build, as a vLLM worker extension.

verl copies the trained weights into its rollout engine with ``model.load_weights`` on the live
vLLM model, then runs vLLM's post-load processing over the whole model
(``vLLMColocateWorkerExtension.update_weights_from_ipc``). On the CPU, vLLM's post-load processing
packs each linear layer's weight for its GEMM kernels and drops the original parameter, so the next
``load_weights`` finds no weight to load into. vLLM has a lifecycle for exactly this, layerwise
reloading (``vllm.model_executor.model_loader.reload``, what vLLM's own ``reload_weights`` uses):
it restores each layer's parameters as they were created, loads into them, and packs each layer
again once its weights are in.

:class:`CpuWeightSyncExtension` receives the weights as verl sends them (verl's
``BucketedWeightReceiver``, over shared memory on the CPU) and loads them inside that lifecycle.
verl's config selects it: ``actor_rollout_ref.rollout.engine_kwargs.vllm.worker_extension_cls``
(verl passes its vLLM engine arguments last, over its own choice of extension class).
"""

from __future__ import annotations

import logging
from typing import Any

import torch
from verl.workers.rollout.vllm_rollout.bucketed_weight_transfer import BucketedWeightReceiver
from verl.workers.rollout.vllm_rollout.utils import vLLMColocateWorkerExtension

from gem_core.errors import GemError

logger = logging.getLogger("gem_adapters.verl")


class CpuWeightSyncExtension(vLLMColocateWorkerExtension):
    """verl's vLLM worker extension, with weight copies that vLLM's CPU build can take."""

    def update_weights_from_ipc(self, peft_config: dict | None = None, base_sync_done: bool = False,
                                use_shm: bool = False) -> None:
        from vllm.model_executor.model_loader.reload import (
            finalize_layerwise_reload,
            initialize_layerwise_reload,
        )

        if peft_config:
            raise GemError("verl's CPU runs copy full weights into vLLM; LoRA (actor_rollout_ref.model.lora_rank) "
                           "is not supported there: set it to 0.")
        model = self.model_runner.model
        if self.device is None:
            self.device = torch.device("cpu")
        initialize_layerwise_reload(model)
        copied = 0

        def load_bucket(weights: list[tuple[str, torch.Tensor]], is_last: bool) -> None:
            nonlocal copied
            # A bucket's tensors are views of the shared-memory buffer the next bucket overwrites,
            # and layerwise reloading keeps them until their layer is complete: keep copies.
            self._update_weights([(name, tensor.clone()) for name, tensor in weights],
                                 peft_config=None, base_sync_done=base_sync_done)
            copied += sum(tensor.numel() for _, tensor in weights)

        receiver = BucketedWeightReceiver(zmq_handle=self._get_zmq_handle(), device=self.device, use_shm=use_shm)
        receiver.receive_weights(on_bucket_received=load_bucket)
        finalize_layerwise_reload(model, self.model_runner.vllm_config.model_config)
        logger.info("GEM CPU weight sync: %d values copied into vLLM; parameter checksum %r", copied,
                    parameter_checksum(model))


def parameter_checksum(model: Any) -> float:
    """The sum of every parameter of the vLLM model that still holds its values (vLLM's CPU build
    keeps packed copies of linear weights elsewhere): changes when the weights change."""
    total = 0.0
    for parameter in model.parameters():
        if parameter.numel():
            total += float(parameter.detach().double().sum())
    return total
