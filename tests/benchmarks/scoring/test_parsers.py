"""Parsers: hand-worked examples for every answer form the brief lists, and properties."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchmarks.scoring.parsers import (
    answer_key_letters,
    parse_box,
    parse_number,
    parse_option,
    parse_option_set,
    parse_yes_no,
    split_lettered_options,
)
from benchmarks.scoring.units import Quantity, read_unit, unit_stated_in_question

OPTIONS = {
    "A": "glass bottle",
    "B": "frame of the reed picture",
    "C": "cat on the cushion",
    "D": "dark brown armchair",
}


@pytest.mark.parametrize(
    ("text", "letter", "method"),
    [
        ("(b)", "B", "bare_letter"),
        ("B.", "B", "bare_letter"),
        ("Answer: b", "B", "answer_marker"),
        ("Answer: (b) frame of the reed picture\nBounding Box: [1, 2, 3, 4]", "B", "answer_marker"),
        ("The correct answer is (C).", "C", "answer_marker"),
        ("B) frame of the reed picture", "B", "leading_letter"),
        ("I would choose option D here.", "D", "choice_word"),
        ("frame of the reed picture", "B", "option_text_exact"),
        ("It is the dark brown armchair, clearly.", "D", "option_text"),
        ("<think>Maybe A? or C</think>The answer is A", "A", "answer_marker"),
        ("Looking at it, I think C", "C", "standalone_letter"),
    ],
)
def test_option_letter_forms(text: str, letter: str, method: str) -> None:
    result = parse_option(text, OPTIONS)
    assert (result.value, result.ok, result.method) == (letter, True, method)
    assert result.explanation


@pytest.mark.parametrize(
    ("text", "method"),
    [
        ("I cannot determine this from the image.", "refusal"),
        ("None of the above options are visible.", "refusal"),
        ("", "empty"),
        ("(a) or (c), hard to say", "ambiguous"),
        ("Answer: E", "letter_out_of_range"),
        ("A cat sits there.", "no_option"),  # the article "A" is not option A
        ("Answer: a cat", "no_option"),  # lower-case "a" followed by a word is an article
    ],
)
def test_option_failures_are_reported(text: str, method: str) -> None:
    result = parse_option(text, OPTIONS)
    assert not result.ok and result.value is None and result.method == method


def test_option_text_prefers_the_longer_matching_option() -> None:
    # "left" lies inside "back-left": only the more specific option counts
    result = parse_option("back-left", {"A": "back-left", "B": "front-right", "C": "left"})
    assert result.value == "A"


def test_left_is_option_a_not_e() -> None:
    """The project parser reads the option's text; SpatialScore's public one reads the 'e' of 'Left'."""
    assert parse_option("Left", {"A": "Left", "B": "Right"}).value == "A"


@pytest.mark.parametrize(
    ("text", "letters"),
    [
        ("A, C", ("A", "C")),
        ("AC", ("A", "C")),
        ("['A', 'C']", ("A", "C")),
        ("['B, E']", ("B", "E")),
        ("A and C", ("A", "C")),
        ("Answer: B and E", ("B", "E")),
        ("(c) and (a)", ("A", "C")),
    ],
)
def test_option_sets(text: str, letters: tuple[str, ...]) -> None:
    assert parse_option_set(text, "ABCDE").value == letters


def test_option_set_by_texts_and_failure() -> None:
    options = {"A": "lamp", "B": "sofa", "C": "chair"}
    assert parse_option_set("the lamp and the chair", options).value == ("A", "C")
    assert parse_option_set("I can't tell", options).method == "refusal"


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("No, that is not correct.", "no"),
        ("Yes.", "yes"),
        ("The answer is no.", "no"),
        ("true", "yes"),
        ("That statement is false", "no"),
        ("It is not true.", "no"),
        ("There is no stop sign.", "no"),
    ],
)
def test_yes_no(text: str, value: str) -> None:
    assert parse_yes_no(text).value == value


def test_yes_no_ambiguous_and_missing() -> None:
    assert parse_yes_no("I'd say maybe yes, maybe no").method == "ambiguous"
    assert parse_yes_no("Perhaps.").ok is False


@pytest.mark.parametrize(
    ("text", "value", "unit", "method"),
    [
        ("2.5 m", 2.5, "m", "number"),
        ("about 40cm", 40.0, "cm", "number"),
        ("1,200 mm", 1200.0, "mm", "number"),
        ("3 ft", 3.0, "ft", "number"),
        ("12 inches", 12.0, "in", "number"),
        ("It is 10-15 cm long", 15.0, "cm", "range_max"),
        ("between 3 and 4 feet", 4.0, "ft", "range_max"),
        ("roughly 2 to 3 meters", 3.0, "m", "range_max"),
        ("three", 3.0, None, "number_word"),
        ("twenty-five chairs", 25.0, None, "number_word"),
        ("-3.5", -3.5, None, "number"),
        ("\\scalar{1.2} \\distance_unit{meters}", 1.2, "m", "scalar_tag"),
        ("scalar{80} distance_unit{cm}", 80.0, "cm", "scalar_tag"),
        ("The room is 28.6 square meters", 28.6, "m2", "number"),
        ("It is 2 m long and 1 m wide", 1.0, "m", "last_number"),
        ("Reasoning: 2 chairs, 3 tables. Answer: 5", 5.0, None, "answer_marker"),
        ("There are 3 in the room", 3.0, None, "number"),  # "in" here is not inches
    ],
)
def test_numbers_with_units(text: str, value: float, unit: str | None, method: str) -> None:
    result = parse_number(text)
    assert result.ok and result.value == Quantity(value, unit) and result.method == method


@pytest.mark.parametrize(
    ("text", "value", "method"),
    [
        # a comma after a run, not before a digit: punctuation
        (
            "1,000,000, give or take",
            1_000_000.0,
            "number",
        ),
        ("About 1,200, I think.", 1200.0, "number"),
        ("1,234.5 m", 1234.5, "number"),  # a decimal part after grouped digits
        ("1,000,5", 5.0, "last_number"),  # a group of one digit: a list of numbers 1, 0, 5
        ("12,34,567", 567.0, "last_number"),  # a short middle group: 12, 34, 567
        ("1234,567", 567.0, "last_number"),  # a first group of four digits: 1234, 567
        ("(3,4)", 4.0, "last_number"),
        ("3,1,000", 0.0, "last_number"),  # the whole run is malformed: 3, 1, 0 (not 3 and 1000)
    ],
)
def test_thousands_separators(text: str, value: float, method: str) -> None:
    """One number when the run of comma-joined groups is well formed (1-3 digits, then groups of exactly 3,
    nothing but a non-digit after); else each group is a number of its own."""
    result = parse_number(text)
    assert (result.value.value, result.method) == (value, method), result


def test_number_failures() -> None:
    assert parse_number("I cannot tell the distance.").method == "refusal"
    assert parse_number("no idea at all").method == "no_number"


def test_units_read_after_numbers_and_in_questions() -> None:
    assert read_unit(" meters away") == ("m", 7)
    assert read_unit(" min") == (None, 0)
    assert unit_stated_in_question("What is the distance (in meters)?") == "m"
    assert unit_stated_in_question("measured in centimeters?") == "cm"
    assert unit_stated_in_question("What is the size of this room (in square meters)?") == "m2"
    assert unit_stated_in_question("How many chairs are in the room?") is None


@pytest.mark.parametrize(
    ("text", "box", "method"),
    [
        ("Answer: (a)\nBounding Box: [809, 811, 834, 918]", (0.809, 0.811, 0.834, 0.918), "box_0-1000"),
        ('{"bbox_2d": [0.25, 0.1, 0.75, 0.8]}', (0.25, 0.1, 0.75, 0.8), "box_0-1"),
        ("the box is (100, 200, 300, 400)", (0.1, 0.2, 0.3, 0.4), "box_0-1000"),
    ],
)
def test_boxes_on_both_scales(text: str, box: tuple[float, ...], method: str) -> None:
    result = parse_box(text)
    assert result.ok and result.method == method
    assert result.value == pytest.approx(box)


def test_box_problems_are_reported() -> None:
    assert parse_box("Bounding Box: [1.2.3, 4, 5, 6]").method == "malformed_box"
    assert parse_box("[0, 0, 2000, 3000]").method == "box_scale_unknown"
    inverted = parse_box("[500, 500, 100, 100]")
    assert (
        not inverted.ok
        and inverted.method == "invalid_box"
        and inverted.value == pytest.approx((0.5, 0.5, 0.1, 0.1))
    )
    assert parse_box("no box here").method == "no_box"
    assert parse_box("[50, 40, 150, 120]", scale="pixel", image_size=(200, 80)).value == pytest.approx(
        (0.25, 0.5, 0.75, 1.5)
    )


def test_options_written_in_questions() -> None:
    assert split_lettered_options("moving left or right?\n(a) Left (b) Right") == {"A": "Left", "B": "Right"}
    assert split_lettered_options("Options: A. back-left, B. front-right, C. front-left") == {
        "A": "back-left",
        "B": "front-right",
        "C": "front-left",
    }
    lines = split_lettered_options("Which?\nA: Point A\nB: Point B\n\nWhich point corresponds?")
    assert lines == {"A": "Point A", "B": "Point B"}
    hop = split_lettered_options(
        '<choice>(a) orange structure with "Metro", (b) bicycle, (c) laptop, (d) box</choice> And provide'
    )
    assert hop == {"A": 'orange structure with "Metro"', "B": "bicycle", "C": "laptop", "D": "box"}


def test_answer_keys() -> None:
    assert answer_key_letters("(a)") == ("A",)
    assert answer_key_letters("(c) frame of the reed picture") == ("C",)
    assert answer_key_letters("AC") == ("A", "C")
    assert answer_key_letters("B, E") == ("B", "E")
    with pytest.raises(ValueError, match="names no option letter"):
        answer_key_letters("Yes")


@given(
    st.sampled_from("ABCD"),
    st.sampled_from(["{}", "({})", "{}.", "Answer: {}", "answer: ({})", "The answer is {}."]),
)
def test_any_letter_in_any_common_form_is_read(letter: str, form: str) -> None:
    assert parse_option(form.format(letter), "ABCD").value == letter


@given(
    st.floats(min_value=0.01, max_value=9999, allow_nan=False).map(lambda v: round(v, 2)),
    st.sampled_from([("m", "m"), ("cm", "cm"), ("meters", "m"), ("feet", "ft"), ("mm", "mm"), ("", None)]),
)
def test_number_round_trip(value: float, unit: tuple[str, str | None]) -> None:
    written, canonical = unit
    result = parse_number(f"The answer is {value} {written}".strip())
    assert result.ok and result.value == Quantity(value, canonical)


@given(st.lists(st.integers(min_value=0, max_value=1000), min_size=4, max_size=4))
def test_boxes_on_the_1000_scale_are_normalised(coords: list[int]) -> None:
    result = parse_box(f"Bounding Box: {coords}")
    if max(coords) <= 1:
        assert result.method.endswith("0-1") or result.method == "invalid_box"
    else:
        assert result.value == pytest.approx(tuple(c / 1000 for c in coords))
