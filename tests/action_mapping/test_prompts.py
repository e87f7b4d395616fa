from action_mapping import (
    NAVIGATION_STEP_SIZES,
    StepSizes,
    parse_plan,
    render_manipulation_prompt,
    render_navigation_prompt,
)
from tests.snapshots import assert_matches_snapshot


def test_navigation_prompt_snapshot():
    assert_matches_snapshot("navigation_prompt.txt", render_navigation_prompt())


def test_manipulation_prompt_snapshot():
    assert_matches_snapshot("manipulation_prompt.txt", render_manipulation_prompt())


def test_prompts_carry_their_parameters():
    text = render_navigation_prompt(StepSizes(0.05, 0.25), num_steps=4, max_step_num=7)
    assert "0.05 m per step" in text and "0.25 rad per step" in text
    assert "step_1 to step_4" in text and "from 1 to 7" in text
    assert str(NAVIGATION_STEP_SIZES.translation) in render_navigation_prompt()


def test_prompt_examples_parse_cleanly():
    for text in (render_navigation_prompt(), render_manipulation_prompt()):
        example = text[text.index('{"step_1"') :]
        plan = parse_plan(example)
        assert plan.ok and len(plan.steps) == 2
