"""GPU slots: which device ids the shard may use, and handing them to files.

Slot ids come from, in order: ``--gpu-ids 0,1,...``; ``--gpus N`` (the first N of
``CUDA_VISIBLE_DEVICES`` when that is set, else ``0..N-1``); for ``--hw cuda`` only, the devices
in ``CUDA_VISIBLE_DEVICES`` or the lines of ``nvidia-smi -L``. Without any of these the shard has
one anonymous slot, and files run one at a time with the environment untouched.

A file takes ``max(gpus, 1)`` slots, or every slot when its suite has ``gpus-per-file = "all"``;
a file that needs GPUs gets ``CUDA_VISIBLE_DEVICES`` set to its slots' ids. A file needing 0 GPUs
still takes one slot, so on CPU suites the slot count is simply the number of files that run at
once: ``--jobs N`` (unpinned slots: the environment untouched), else 1 unless
``--gpus``/``--gpu-ids`` is given. A file that needs more GPUs than the shard has
is skipped with the reason from :func:`skip_reason`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ci_runner.catalog.limits import MAX_GPUS

VISIBLE_DEVICES = "CUDA_VISIBLE_DEVICES"


class SlotError(ValueError):
    """The requested slots are inconsistent (message names the flag or variable)."""


def parse_id_list(text: str, what: str) -> tuple[str, ...]:
    """``"0,1, 3"`` -> ``("0", "1", "3")``; empty items, duplicates or more than ``MAX_GPUS``
    ids are errors."""
    ids = tuple(item.strip() for item in text.split(","))
    shown = repr(text) if len(text) <= 60 else repr(text[:57] + "...")
    if not text.strip() or any(not item for item in ids):
        raise SlotError(f"{what}={shown}: expected a comma-separated list of device ids")
    if len(ids) > MAX_GPUS:
        raise SlotError(f"{what}={shown}: {len(ids)} device ids; at most {MAX_GPUS}")
    duplicates = sorted(item for item, count in Counter(ids).items() if count > 1)
    if duplicates:
        raise SlotError(f"{what}={shown}: duplicate device id(s) {', '.join(duplicates)}")
    return ids


def count_nvidia_smi_gpus() -> int:
    """Number of GPUs ``nvidia-smi -L`` lists; 0 when it is absent or fails."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return 0
    try:
        out = subprocess.run(
            [exe, "-L"], capture_output=True, text=True, timeout=30, check=False
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return 0
    return sum(1 for line in out.splitlines() if line.strip().startswith("GPU "))


@dataclass(frozen=True)
class SlotSet:
    """The slot ids of a shard; ``pinned`` = ids are real devices to put in the environment."""

    ids: tuple[str, ...]
    pinned: bool
    source: str  # human-readable: where the ids came from

    def describe(self) -> str:
        if not self.pinned:
            return f"{len(self.ids)} slot{'s' if len(self.ids) > 1 else ''} ({self.source})"
        return f"{len(self.ids)} slot(s): GPU {','.join(self.ids)} ({self.source})"


def resolve_slots(
    hw: str,
    gpus: int | None,
    gpu_ids: Sequence[str] | None,
    environ: Mapping[str, str] | None = None,
    nvidia_smi_count: int | None = None,
    jobs: int = 1,
) -> SlotSet:
    """Decide the shard's slots from the flags and the machine (see module docstring).

    ``gpu_ids``: the ids of ``--gpu-ids``, already parsed (:func:`parse_id_list`); ``jobs``:
    ``--jobs``, the files at a time of a backend other than cuda.
    """
    env = os.environ if environ is None else environ
    if gpu_ids is not None:
        return SlotSet(tuple(gpu_ids), True, "--gpu-ids")
    visible_text = env.get(VISIBLE_DEVICES, "").strip()
    visible = parse_id_list(visible_text, VISIBLE_DEVICES) if visible_text else ()
    if gpus is not None:
        if gpus < 1:
            raise SlotError(f"--gpus={gpus}: expected a positive number of GPUs")
        if visible:
            if gpus > len(visible):
                raise SlotError(
                    f"--gpus={gpus}: only {len(visible)} device(s) in "
                    f"{VISIBLE_DEVICES}={visible_text!r}"
                )
            return SlotSet(visible[:gpus], True, f"--gpus, from {VISIBLE_DEVICES}")
        return SlotSet(tuple(str(i) for i in range(gpus)), True, "--gpus")
    if hw == "cuda":
        if visible:
            return SlotSet(visible, True, VISIBLE_DEVICES)
        count = count_nvidia_smi_gpus() if nvidia_smi_count is None else nvidia_smi_count
        if count > 0:
            return SlotSet(tuple(str(i) for i in range(count)), True, "nvidia-smi -L")
        return SlotSet(("0",), False, "no GPU found: one file at a time")
    if jobs > 1:
        return SlotSet(tuple(str(i) for i in range(jobs)), False, f"--jobs {jobs}")
    return SlotSet(("0",), False, "sequential")


class SlotPool:
    """Thread-safe free list of slot ids."""

    def __init__(self, ids: Sequence[str]) -> None:
        self._order = {slot: index for index, slot in enumerate(ids)}
        self._free = list(ids)
        self._lock = threading.Lock()
        self.size = len(self._free)

    @property
    def free_count(self) -> int:
        with self._lock:
            return len(self._free)

    def try_take(self, count: int) -> tuple[str, ...] | None:
        """Take ``count`` slots (lowest ids first) or None when not enough are free."""
        with self._lock:
            if count > len(self._free):
                return None
            taken, self._free = self._free[:count], self._free[count:]
            return tuple(taken)

    def give_back(self, ids: Sequence[str]) -> None:
        with self._lock:
            self._free.extend(ids)
            self._free.sort(key=self._order.__getitem__)


def slots_needed(gpus: int) -> int:
    return max(gpus, 1)


def skip_reason(gpus: int, all_gpus: bool, gpus_from: str, slots: SlotSet) -> str | None:
    """Why a file needing ``gpus`` (at least, with ``all_gpus``) cannot run here, or None."""
    need = slots_needed(gpus)
    if need <= len(slots.ids):
        return None
    amount = f"at least {need}" if all_gpus else str(need)
    source = f" ({gpus_from})" if gpus_from else ""
    return (
        f"needs {amount} GPUs{source} but this runner has {slots.describe()}; "
        f"run it on a runner with {need} or more GPUs"
    )
