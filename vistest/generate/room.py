"""Room size: ``room_size_estimation_single`` (``room.area_type == "single_room"``: the main
room) or ``room_size_estimation_multiple`` (otherwise: everything the video shows), the floor
area in m^2 of the scene's ``room`` (its polygon's area, else ``size_m2``); ReVSI's templates."""
from __future__ import annotations

from . import templates as tpl
from .candidates import Candidate
from .facts import SceneFacts
from .rules import RoomSizeRules

SINGLE, MULTIPLE = "room_size_estimation_single", "room_size_estimation_multiple"
MCQ = "room_size_estimation_mcq"
VSIBENCH = "room_size_estimation"  # VSI-Bench's type: its template, whatever the area type
TYPES = (SINGLE, MULTIPLE)


def candidates(facts: SceneFacts, rules: RoomSizeRules, types: tuple[str, ...]) -> list[Candidate]:
    """The scene's room-size question(s): none when the scene has no room area."""
    area = facts.room_area_m2
    if area is None:
        return []
    single = facts.room_area_type == "single_room"
    qtype = SINGLE if single else MULTIPLE
    template = tpl.ROOM_SIZE_SINGLE if single else tpl.ROOM_SIZE_MULTIPLE
    out = []
    for t in (qtype, MCQ):
        if t in types:
            out.append(Candidate(facts.scene_id, t, template, value=float(area), decimals=rules.decimals,
                                 detail=(("area_m2", float(area)),)))
    if VSIBENCH in types:
        out.append(Candidate(facts.scene_id, VSIBENCH, tpl.VSIBENCH_ROOM_SIZE, value=float(area),
                             decimals=rules.decimals, detail=(("area_m2", float(area)),)))
    return out
