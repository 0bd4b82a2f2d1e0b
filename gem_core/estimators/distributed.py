"""An ``all_reduce`` over torch.distributed, for estimators that normalise over the whole batch."""

from __future__ import annotations

from typing import Any

import numpy as np

from gem_core.errors import GemError
from gem_core.estimators.moments import AllReduce
from gem_core.estimators.tokens import import_torch


def torch_all_reduce(group: Any = None) -> AllReduce:
    """A function summing a small numpy array over the ranks of a torch.distributed process group
    (the default group unless ``group`` is given), for the ``all_reduce`` keyword of ``rebn`` and
    ``reinforce_baseline``. With the NCCL backend the sums travel on the current CUDA device."""
    torch = import_torch()
    dist = torch.distributed

    def all_reduce(values: np.ndarray) -> np.ndarray:
        if not (dist.is_available() and dist.is_initialized()):
            raise GemError(
                "torch.distributed is not initialised: call torch.distributed.init_process_group "
                "first, or leave all_reduce out when training in one process."
            )
        on_gpu = dist.get_backend(group) == "nccl"
        device = torch.device("cuda", torch.cuda.current_device()) if on_gpu else torch.device("cpu")
        tensor = torch.tensor(values, dtype=torch.float64, device=device)
        dist.all_reduce(tensor, op=dist.ReduceOp.SUM, group=group)
        return tensor.cpu().numpy()

    return all_reduce
