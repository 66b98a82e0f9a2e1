"""Run a sequence of kernel calls once, eagerly or as a replayed CUDA graph (for tests)."""

from collections.abc import Callable

import torch


def run_once(calls: Callable[[], None], *, in_graph: bool) -> None:
    """Run ``calls`` once on the current stream: directly, or captured into a CUDA graph and
    replayed once (load the modules before: nothing may compile during capture); then wait for
    the device."""
    if in_graph:
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            calls()
        graph.replay()
    else:
        calls()
    torch.cuda.synchronize()
