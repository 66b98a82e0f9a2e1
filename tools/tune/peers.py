"""The peers each shape is timed against: torch.compile and FlashInfer, from its definition."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tools.tune.shapes import Shape

TUNED_PEERS = ("torch_compile", "flashinfer")


class Peers:
    """The definition's torch.compile and FlashInfer peers of a shape, unless turned off."""

    def __init__(self, use_compile: bool, use_flashinfer: bool) -> None:
        self.off = {"torch_compile": not use_compile, "flashinfer": not use_flashinfer}

    def for_shape(self, shape: Shape) -> dict[str, Callable[..., Any] | str]:
        """name -> callable (same arguments as ours), or the reason it is N/A."""
        flag = {"torch_compile": "--no-compile", "flashinfer": "--no-flashinfer"}
        peers: dict[str, Callable[..., Any] | str] = {}
        for name in TUNED_PEERS:
            peer = shape.case.peers.get(name, f"{shape.kernel} defines no {name} peer")
            if self.off[name] and not isinstance(peer, str):
                peer = flag[name]
            peers[name] = peer
        return peers
