"""What the GPUs of this machine can do together: peer access per pair and the interconnect.

``python -m jit_kernel.distributed.topology`` prints the GPUs, the peer-access matrix
(``torch.cuda.can_device_access_peer`` for every ordered pair), whether a custom all-reduce can
run across them (and if not, which pair lacks peer access), the NCCL version, and
``nvidia-smi topo -m`` (NVLink ``NV#`` vs PCIe ``PIX/PXB/PHB/NODE/SYS`` links) when nvidia-smi is
installed. Exit status 0 when a custom all-reduce can run on every visible GPU, 1 otherwise.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Sequence

import torch

from jit_kernel.distributed.peers import p2p_problems

__all__ = ["describe_topology", "nvidia_smi_topology", "peer_access_matrix"]


def peer_access_matrix(devices: Sequence[int] | None = None) -> dict[tuple[int, int], bool]:
    """``{(a, b): can cuda:a access cuda:b}`` for every ordered pair of distinct devices."""
    ids = list(range(torch.cuda.device_count())) if devices is None else list(devices)
    return {
        (a, b): bool(torch.cuda.can_device_access_peer(a, b)) for a in ids for b in ids if a != b
    }


def nvidia_smi_topology(timeout: float = 15.0) -> str:
    """``nvidia-smi topo -m`` output, or a line saying why it is not available."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return "nvidia-smi not found"
    try:
        done = subprocess.run(
            [smi, "topo", "-m"], capture_output=True, text=True, timeout=timeout, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"nvidia-smi topo -m failed: {error}"
    return (done.stdout or done.stderr).rstrip()


def describe_topology(devices: Sequence[int] | None = None, *, smi: bool = True) -> str:
    """A human-readable report (see the module docstring). Never raises."""
    lines = []
    try:
        if not torch.cuda.is_available():
            return "no CUDA GPU is visible (torch.cuda.is_available() is False)"
        ids = list(range(torch.cuda.device_count())) if devices is None else list(devices)
        for index in ids:
            props = torch.cuda.get_device_properties(index)
            lines.append(
                f"cuda:{index}: {props.name}, sm_{props.major}{props.minor}, "
                f"{props.multi_processor_count} SMs, {props.total_memory / 2**30:.0f} GiB"
            )
        matrix = peer_access_matrix(ids)
        lines.append("peer access (row can access column):")
        lines.append("        " + " ".join(f"cuda:{b:<2}" for b in ids))
        for a in ids:
            cells = [
                "   -   " if a == b else ("  yes  " if matrix[a, b] else "  NO   ") for b in ids
            ]
            lines.append(f"cuda:{a:<2}  " + " ".join(cells))
        problems = p2p_problems(ids)
        lines.append(
            "custom all-reduce: "
            + ("usable on these GPUs" if not problems else "NOT usable: " + "; ".join(problems))
        )
        try:
            lines.append(f"NCCL version: {'.'.join(map(str, torch.cuda.nccl.version()))}")
        except Exception as error:
            lines.append(f"NCCL version: unknown ({error})")
    except Exception as error:
        lines.append(f"topology probe failed: {type(error).__name__}: {error}")
    if smi:
        lines.append("nvidia-smi topo -m:")
        lines.append(nvidia_smi_topology())
    return "\n".join(lines)


def main() -> int:
    print(describe_topology(), flush=True)
    return 0 if not p2p_problems() else 1


if __name__ == "__main__":
    sys.exit(main())
