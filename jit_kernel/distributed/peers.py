"""Whether GPUs can form a custom all-reduce: peer access between every pair (before a
communicator exists), and what the ranks' setup information disagrees on (while one forms)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from jit_kernel.distributed.launch import device_indices

MIN_WORLD_SIZE = 2
MAX_WORLD_SIZE = 8  # kMaxWorld in custom_all_reduce_kernel.cuh


def visible_devices(devices: Sequence[int] | None) -> list[int]:
    """``devices`` (default: every visible GPU); TypeError for an entry that is no index."""
    if devices is None:
        return list(range(torch.cuda.device_count()))
    return device_indices(devices, "devices")


def p2p_problems(devices: Sequence[int] | None = None) -> list[str]:
    """Why a custom all-reduce cannot run across ``devices`` (default: every visible GPU).

    Empty when it can: 2..8 GPUs and peer access (``torch.cuda.can_device_access_peer``) in both
    directions between every pair. Otherwise one line per problem, naming each pair that lacks
    peer access (e.g. ``no peer access cuda:0 -> cuda:1``). Never raises.
    """
    try:
        ids = visible_devices(devices)
        if not torch.cuda.is_available():
            return ["no CUDA GPU is visible (torch.cuda.is_available() is False)"]
        if len(ids) < MIN_WORLD_SIZE:
            return [f"needs at least {MIN_WORLD_SIZE} GPUs, got {len(ids)}"]
        if len(ids) > MAX_WORLD_SIZE:
            return [f"supports at most {MAX_WORLD_SIZE} GPUs, got {len(ids)}"]
        if len(set(ids)) != len(ids):
            return [f"the same GPU appears twice in {ids}"]
        return [
            f"no peer access cuda:{a} -> cuda:{b}"
            for a in ids
            for b in ids
            if a != b and not torch.cuda.can_device_access_peer(a, b)
        ]
    except TypeError as error:
        return [str(error)]
    except Exception as error:  # a probe never raises
        return [f"peer-access probe failed: {type(error).__name__}: {error}"]


def setup_problems(infos: list[dict[str, Any]]) -> list[str]:
    """Why the ranks cannot form a communicator (the same list on every rank)."""
    problems = []
    hosts = {info["host"] for info in infos}
    if len(hosts) > 1:
        problems.append(f"all ranks must run on one host, got {sorted(hosts)}")
    if len({info["args"] for info in infos}) > 1:
        args = [info["args"] for info in infos]
        problems.append(f"(max_bytes, one_shot_max_bytes, max_blocks) differ between ranks: {args}")
    seen: dict[str, int] = {}
    for rank, info in enumerate(infos):
        if info["uuid"] in seen:
            problems.append(f"ranks {seen[info['uuid']]} and {rank} share one GPU ({info['uuid']})")
        seen.setdefault(info["uuid"], rank)
    for rank, info in enumerate(infos):
        for peer, other in enumerate(infos):
            if rank != peer and info["access"].get(other["uuid"]) is False:
                problems.append(
                    f"no peer access from rank {rank} (cuda:{info['device']}) to rank {peer} "
                    f"(cuda:{other['device']} of rank {peer}'s process)"
                )
    return problems
