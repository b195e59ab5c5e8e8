"""Question wording, one template per generated question type.

ReVSI's templates (its released generator, ``qa_generation/*.py`` of github.com/3dlg-hcvc/revsi):
"the scene", not VSI-Bench's "this room", because a video may show several rooms. Appearance
order keeps VSI-Bench's template (ReVSI dropped the task). The numeric multiple-choice types
(``*_mcq``, vistest's) reuse the wording of their numeric type. docs/generate.md lists them.
"""
from __future__ import annotations

COUNT_SINGLE = "How many {object_name}(s) are in the scene?"
COUNT_MULTIPLE = "How many {object_name_1}(s) and {object_name_2}(s) are in the scene in total?"
SIZE = ("Based on visual evidence from the video, what is the length of the longest dimension (length, width, "
        "or height) of the {object_name}, measured in centimeters?")
ABS_DISTANCE = ("Measuring from the closest point of each object, what is the direct distance between the "
                "{object_name_1} and the {object_name_2} (in meters)?")
REL_DISTANCE_CLOSEST = ("Measuring from the closest point of each object, which of these objects ({choices}) "
                        "is the closest to the {object_name}?")
REL_DISTANCE_FARTHEST = ("Measuring from the closest point of each object, which of these objects ({choices}) "
                         "is the farthest from the {object_name}?")
_BACK = "\nAn object is to my back if I would have to turn at least 135 degrees in order to face it."
REL_DIRECTION = {
    "forward_easy": ("If I am standing by the {positioning_object} and facing the {orienting_object}, is the "
                     "{querying_object} to my left, right, or back?" + _BACK),
    "backward_easy": ("If I am standing by the {positioning_object} and facing in the opposite direction of the "
                      "{orienting_object}, is the {querying_object} to my left, right, or back?" + _BACK),
    "forward_hard": ("If I am standing by the {positioning_object} and facing the {orienting_object}, is the "
                     "{querying_object} to my front-left, front-right, back-left, or back-right?"),
    "backward_hard": ("If I am standing by the {positioning_object} and facing in the opposite direction of the "
                      "{orienting_object}, is the {querying_object} to my front-left, front-right, back-left, "
                      "or back-right?"),
}
EASY_ANSWERS = ("left", "right", "back")
HARD_ANSWERS = ("front-left", "front-right", "back-left", "back-right")
APPEARANCE_ORDER = ("What will be the first-time appearance order of the following categories in the video: "
                    "{categories}?")
ROOM_SIZE_MULTIPLE = ("What is the size of the scene (in square meters)? If multiple rooms are shown, estimate "
                      "the size of the combined space.")
ROOM_SIZE_SINGLE = ("What is the size of the main room (in square meters)? If multiple rooms are shown, estimate "
                    "only the size of the dominant room in which the video is primarily recorded.")
# VSI-Bench's route plans (its rows; VLM-3R's src/question_templates.py ROUTE_PLAN_TEMPLATE), ReVSI the same;
# {actions}: "1. [please fill in] 2. Go forward until the chair 3. [please fill in] 4. Go forward until the sofa."
ROUTE_PLAN = ("You are a robot beginning at the {start_object} facing the {facing_object}. You want to navigate to "
              "the {destination_object}. You will perform the following actions (Note: for each [please fill in], "
              "choose either 'turn back,' 'turn left,' or 'turn right.'): {actions} You have reached the final "
              "destination.")
LETTERS = "ABCDEFGHIJ"

# ---- VSI-Bench's wording (``--types vsibench``): "this room"; VLM-3R's ``src/question_templates.py``
# reproduces VSI-Bench's templates (VSI-Bench's own generator is unreleased); the relative
# direction levels are VLM-3R's v3 (easy: left/right), v2 (medium) and v1 (hard).
VSIBENCH_COUNT = "How many {object_name}(s) are in this room?"
VSIBENCH_SIZE = ("What is the length of the longest dimension (length, width, or height) of the {object_name}, "
                 "measured in centimeters?")
VSIBENCH_ABS_DISTANCE = ABS_DISTANCE
VSIBENCH_REL_DISTANCE = REL_DISTANCE_CLOSEST
VSIBENCH_ROOM_SIZE = ("What is the size of this room (in square meters)? If multiple rooms are shown, estimate the "
                      "size of the combined space.")
VSIBENCH_REL_DIRECTION = {
    "object_rel_direction_easy": ("If I am standing by the {positioning_object} and facing the {orienting_object}, "
                                  "is the {querying_object} to the left or the right of the {orienting_object}?"),
    "object_rel_direction_medium": REL_DIRECTION["forward_easy"],
    "object_rel_direction_hard": (REL_DIRECTION["forward_hard"] + "\nThe directions refer to the quadrants of a "
                                  "Cartesian plane (if I am standing at the origin and facing along the positive "
                                  "y-axis)."),
}
LR_ANSWERS = ("left", "right")
