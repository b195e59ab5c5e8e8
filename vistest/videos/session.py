"""What the parts of one write of a VariantPlan share (stage 5): the plan, the output folder,
the resources chosen, the progress bar, and the three parts each with one job: the processes
and temporary files to stop and remove on failure (vistest.videos.processes), the work folder
(vistest.videos.spool) and the staged outputs (vistest.videos.staging).

The encode passes (vistest.videos.encode), the frame pool (vistest.videos.intra) and the
stream copy (vistest.videos.remux) take a :class:`WriteSession`; vistest.videos.write makes it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .memory import ResourcePlan
from .pixels import black_frame
from .plan import VariantPlan
from .processes import Processes
from .spool import WorkFolder
from .staging import Staging


@dataclass
class WriteSession:
    """One write of ``plan`` under ``outdir`` with ``res``; ``bar``: a progress bar (``update(n)``,
    in decoded or muxed frames); ``passes``: decodes of the source so far; ``frames_encoded``:
    frames given to libx264 so far; ``black``: the plan's black yuv420p frame."""

    plan: VariantPlan
    outdir: Path
    res: ResourcePlan
    bar: object
    work: WorkFolder
    procs: Processes = field(default_factory=Processes)
    staging: Staging = field(default_factory=Staging)
    passes: int = 0
    frames_encoded: int = 0
    black: bytes = field(init=False)

    def __post_init__(self):
        self.black = black_frame(self.plan.size)
