"""MultihopSpatial's GRPO rewards: hand-made completions with hand-worked rewards."""

from __future__ import annotations

import re

import pytest

from benchmarks.posttrain.multihop_rewards import (
    PAPER_REWARD_FUNCS,
    RECIPE_REWARD_FUNCS,
    box_to_1000,
    format_ok,
    msr_bbox_reward,
    msr_format_reward,
    msr_mcq_reward,
    msr_total_reward,
    msr_truncation_reward,
    strip_thinking,
    total_reward,
)
from benchmarks.scoring.metrics import giou

GOOD = "Answer: (c) white car\nBounding Box: [300, 145, 556, 621]"
TRUTH_BOX = [300, 145, 556, 621]

# The recipe's published format pattern, used here only as a cross-check of the linear-time reading on short
# hand-made strings (on such inputs its backtracking is harmless).
_RECIPE_FORMAT = re.compile(
    r"Answer:\s*\([a-d]\)\s*[\w\s\-\'\"]+.*?Bounding Box:\s*\[\s*\d+\s*,\s*\d+\s*,\s*\d+\s*,\s*\d+\s*\]",
    re.IGNORECASE | re.DOTALL,
)

FORMAT_CASES = [
    (GOOD, True),
    ("answer: (C) car bounding box: [1, 2, 3, 4]", True),  # case-insensitive
    ("Answer: (c)\nBounding Box: [1, 2, 3, 4]", True),  # the newline is the one allowed character
    ("Answer: (c) car\nBounding Box: [0.1, 0.2, 0.3, 0.4]", False),  # decimals: not the 0-1000 integer format
    ("Answer: (c), car\nBounding Box: [1, 2, 3, 4]", False),  # ',' may not follow the option
    ("Answer: (c)Bounding Box: [1, 2, 3, 4]", False),  # the box must start after at least one character
    ("Answer: (c) car", False),  # no box
    ("Bounding Box: [1, 2, 3, 4]\nAnswer: (c) car", False),  # box before the answer
    ("Answer: (e) car\nBounding Box: [1, 2, 3, 4]", False),  # e is not an option
    ("Answer: (a), x\nAnswer: (b) car\nBounding Box: [1,2,3,4]", True),  # a later answer qualifies
    ("Answer: (c) car Bounding Box: [1, 2, 3]", False),  # three numbers
    ("Answer: (c) the 'red' car - left\n\nI think.\nBounding Box:[ 10 ,20, 30 , 40 ]", True),
]


@pytest.mark.parametrize(("text", "expected"), FORMAT_CASES)
def test_format_reward_matches_the_recipe_pattern(text: str, expected: bool) -> None:
    assert format_ok(text) is expected
    assert bool(_RECIPE_FORMAT.search(text)) is expected


def test_mcq_reward_reads_first_answer_and_reference_letter() -> None:
    completions = [GOOD, "Answer: (B) car", "The answer is (c)", "Answer: (c) car", GOOD]
    references = ["(c) white car", "(b) car", "(c) car", "(d) dog", "no letter here"]
    assert msr_mcq_reward(completions, response=references) == [1.0, 1.0, 0.0, 0.0, 0.0]
    assert msr_mcq_reward(completions) == [0.0] * 5  # no reference column: 0, as the recipe


def test_bbox_reward_is_half_giou_plus_one() -> None:
    # Hand-worked: pred [0,0,100,100] vs truth [50,0,150,100]: inter 5000, union 15000, hull 15000 -> GIoU
    # 1/3.
    text = "Answer: (a) x\nBounding Box: [0, 0, 100, 100]"
    assert msr_bbox_reward([text], bbox_normalized=[[50, 0, 150, 100]]) == [pytest.approx((1 / 3 + 1) / 2)]
    # Disjoint: pred [0,0,100,100] vs truth [200,0,300,100]: IoU 0, hull 30000, union 20000 -> GIoU -1/3.
    assert msr_bbox_reward([text], bbox_normalized=[[200, 0, 300, 100]]) == [pytest.approx((-1 / 3 + 1) / 2)]
    # Swapped corners count as the box they span (upstream: reward 1 for a perfect but swapped box).
    swapped = "Answer: (a) x\nBounding Box: [556, 621, 300, 145]"
    assert msr_bbox_reward([swapped], bbox_normalized=[TRUTH_BOX]) == [1.0]
    # Unparsable (decimals, missing) or no reference: 0.
    assert msr_bbox_reward(
        ["Bounding Box: [0.1, 0.2, 0.3, 0.4]", "nothing"], bbox_normalized=[TRUTH_BOX, TRUTH_BOX]
    ) == [0.0, 0.0]
    assert msr_bbox_reward([GOOD]) == [0.0]


def test_giou_sort_corners_only_in_compatible_mode() -> None:
    truth = (0.1, 0.1, 0.5, 0.5)
    swapped = (0.5, 0.5, 0.1, 0.1)
    assert giou(swapped, truth) == 0.0  # project default: an inverted box is empty
    assert giou(swapped, truth, sort_corners=True) == 1.0
    # Two degenerate boxes on one point: no enclosing area, GIoU = IoU = 0 in both modes.
    assert giou((1, 1, 1, 1), (1, 1, 1, 1)) == giou((1, 1, 1, 1), (1, 1, 1, 1), sort_corners=True) == 0.0


def test_total_reward_is_the_sum_and_unparsable_scores_zero() -> None:
    completions = [
        GOOD,
        "Answer: (a) dog\nBounding Box: [300, 145, 556, 621]",
        "I cannot tell.",
        [{"role": "assistant", "content": GOOD}],
    ]
    kwargs = {"response": ["(c) white car"] * 4, "bbox_normalized": [TRUTH_BOX] * 4}
    assert msr_total_reward(completions, **kwargs) == [3.0, 2.0, 0.0, 3.0]
    assert msr_format_reward(completions) == [1.0, 1.0, 0.0, 1.0]
    summed = [sum(parts) for parts in zip(*(f(completions, **kwargs) for f in PAPER_REWARD_FUNCS))]
    assert summed == msr_total_reward(completions, **kwargs)
    assert msr_total_reward([GOOD], alpha=2.0, beta=0.5, **{k: v[:1] for k, v in kwargs.items()}) == [
        1.0 + 2.0 + 0.5
    ]
    assert total_reward(GOOD, "(c) white car", TRUTH_BOX) == 3.0
    with pytest.raises(ValueError, match="one per completion"):
        msr_mcq_reward([GOOD, GOOD], response=["(c)"])


def test_truncation_and_thinking() -> None:
    texts = [GOOD, "<think>long reasoning", "<think>r</think>Answer: (c) car", "<think>r</think>" + GOOD]
    assert msr_truncation_reward(texts) == [0.0, -1.0, -1.0, 0.0]
    assert RECIPE_REWARD_FUNCS[-1] is msr_truncation_reward
    assert strip_thinking("<think>maybe (a)</think>\n" + GOOD) == GOOD
    assert (
        strip_thinking("<think>Answer: (a) x ... Answer: (c) white car\nBounding Box: [1")
        == "Answer: (c) white car\nBounding Box: [1"
    )
    assert strip_thinking("<think>no answer yet") == ""
    assert strip_thinking(GOOD) == GOOD


def test_reference_box_conversion_truncates_and_clamps() -> None:
    # 640x480 image, [x, y, w, h] = [-3, 100, 320.9, 500] -> x1 -4.69 -> int -4 -> clamp 0; y2 = 600/480 ->
    # 1000.
    assert box_to_1000([-3, 100, 320.9, 500], 640, 480) == [0, 208, 496, 1000]


def test_format_check_is_linear_on_adversarial_text() -> None:
    # Many answers followed by a long run of allowed characters and no box: the recipe's regex backtracks
    # quadratically here; the project's reading stays one pass.
    text = "Answer: (a) " + "x " * 20000
    assert format_ok(text) is False
