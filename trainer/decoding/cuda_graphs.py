"""One decoding step captured as a CUDA graph.

A decoding step of a small model is a few hundred short kernels; launched one by one from Python
they cost far more than the GPU spends on them. Captured once as a CUDA graph, the whole step
replays as one launch. What a captured step reads and writes must live in tensors allocated
before the capture (their addresses are baked into the graph); :class:`~gem_trainer.decoding.cached_decoder._Batch`
and ``_DeviceSteps`` keep everything a step touches in such tensors, and refilling them is how a
graph is given new data. Random draws on the default CUDA generator advance at every replay.

This module runs on CUDA only; :mod:`gem_trainer.decoding.cached_decoder` runs the same step uncaptured
everywhere else.
"""

from __future__ import annotations

from collections.abc import Callable

#: Uncaptured runs before the capture (on a side stream, as PyTorch's documentation asks), so
#: that one-time work (kernel selection, workspace allocation) stays out of the graph.
WARMUP_RUNS = 2


def capture(step: Callable[[], None]) -> Callable[[], None]:
    """Capture ``step`` (which must allocate nothing it keeps, read nothing back to the host,
    and leave its results in tensors it was given) as a CUDA graph; return what replays it.
    The warm-up runs really run ``step``: capture before loading the data it is for."""
    import torch

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(WARMUP_RUNS):
            step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step()
    return graph.replay
