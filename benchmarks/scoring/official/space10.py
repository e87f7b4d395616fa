"""SpaCE-10's public scorer (its lmms-eval fork), reproduced.

What it does, quirks included:

- The model's answer reaches the scorer as the string of a one-element list (``str(["B"])`` = ``"['B']"``),
  so the whitespace-token letter rules miss plain letters; option texts are then matched as substrings of
  that string (an EQ option "2" matches a response "2").
- Single answer: rule-based extraction (letters A-E, then option texts A-D), then a GPT judge with an
  MMBench-style matching prompt; when both fail, the answer becomes "E" (four option keys + 1), never
  correct for a four-option item.
- Multiple answer: comma-split letters A-E of the list string (again missing plain answers), then the judge;
  when both fail, the answer becomes "F".
- Published numbers come from the judge path. Without a judge, this mode scores what the pipeline scores
  without one: every item it cannot read rule-based gets the fallback letter.
"""

from __future__ import annotations

import string
from collections.abc import Mapping

SINGLE_POST_PROMPT = "\nPlease use the letters provided as the answer. You only need to output one choice, not multiple choices."
MULTIPLE_POST_PROMPT = "\nPlease use the letters provided as the answer. You need to choose two options."
OPTIONS_HEADER = "There are several options:"
_TOKEN_AFFIXES = (
    ("", "."),
    ("", ","),
    ("", ":"),
    ("", ")"),
    ("", ")."),
    ("(", ")"),
    ("(", ")."),
    (":", ""),
    (":", ","),
    (":", "."),
    (":", ")"),
    (":", ")."),
)
JUDGE_FAILED = "Failed to obtain answer via API"


def as_prediction_string(response: str) -> str:
    """What the scorer receives: the string of lmms-eval's one-element result list."""
    return str([response])


def build_prompt_text(question: str, options: Mapping[str, str], multiple: bool) -> str:
    """The task's ``doc_to_text``: question, a space, the option block, then the post-prompt."""
    block = OPTIONS_HEADER + "\n" + "".join(f"{k}. {options[k]}\n" for k in sorted(options))
    return f"{question} {block.rstrip()}\n{MULTIPLE_POST_PROMPT if multiple else SINGLE_POST_PROMPT}"


def _count_affixed(tokens: list[str], choices: str, prefix: str = "", suffix: str = "") -> int:
    return sum(1 for c in choices if prefix + c + suffix in tokens)


def infer_single_letter(answer: str, choices: str = "ABCDE") -> str | None:
    """The single-answer letter rules (``can_infer_option``) on whitespace tokens."""
    if JUDGE_FAILED in answer:
        return None
    tokens = [t.strip() for t in answer.split()]
    if _count_affixed(tokens, choices) == 1:
        for letter in choices:
            if "A" in tokens and len(tokens) > 3:
                break  # "A" may be an article in a sentence: the rule gives up here
            if letter in tokens:
                return letter
    for prefix, suffix in _TOKEN_AFFIXES:
        if _count_affixed(tokens, choices, prefix, suffix) == 1:
            for letter in choices:
                if prefix + letter + suffix in tokens:
                    return letter
    return None


def infer_single_text(answer: str, options: Mapping[str, str]) -> str | None:
    """``can_infer_text``: the one option among A-D whose lower-cased text is a substring of the answer."""
    lower = answer.lower()
    hits = [k for k in "ABCD" if k in options and str(options[k]).lower() in lower]
    return hits[0] if len(hits) == 1 else None


def infer_single(answer: str, options: Mapping[str, str]) -> str | None:
    """Letters first, then option texts."""
    return infer_single_letter(answer) or infer_single_text(answer, options)


def infer_multiple(answer: str) -> list[str] | None:
    """The multiple-answer rule: comma-split, upper-cased tokens that are exactly one of A-E; 1-2 letters."""
    tokens = [t.strip() for t in answer.strip().upper().split(",")]
    found = sorted({t for t in tokens if t in set("ABCDE")})
    return found if 1 <= len(found) <= 2 else None


def fallback_letter(multiple: bool) -> str:
    """The letter given when neither rules nor judge read an answer: E (single) or F (multiple).

    The scorer counts option keys A-D (A-E for multiple answers), which every record carries, and takes the
    letter after them.
    """
    keys = "ABCDE" if multiple else "ABCD"
    return (string.ascii_uppercase[: len(keys)] + ("F" if multiple else "E"))[len(keys)]


def judge_prompt(question: str, options: Mapping[str, str], prediction: str, multiple: bool) -> str:
    """The matching prompt sent to the judge (MMBench style), filled with the list-string prediction."""
    letters = "ABCDE" if multiple else "ABCD"
    option_str = "There are several options: \n"
    for letter in letters:
        if letter not in options:
            break
        option_str += f"{letter}. {options[letter]}\n"
    return (_MULTIPLE_JUDGE if multiple else _SINGLE_JUDGE).format(question, option_str, prediction)


_SINGLE_JUDGE = (
    "You are an AI assistant who will help me to match an answer with several options of a single-choice question. "
    "You are provided with a question, several options, and an answer, and you need to find which option is most "
    "similar to the answer. If the meaning of all options are significantly different from the answer, output E. "
    "Your should output a single uppercase character in A, B, C, D (if they are valid options), and E. \n"
    "Example 1: \nQuestion: What is the main object in image?\nOptions: A. teddy bear B. rabbit C. cat D. dog\n"
    "Answer: a cute teddy bear\nYour output: A\nExample 2: \nQuestion: What is the main object in image?\n"
    "Options: A. teddy bear B. rabbit C. cat D. dog\nAnswer: Spider\nYour output: E\nExample 3: \n"
    "Question: {}?\nOptions: {}\nAnswer: {}\nYour output: "
)
_MULTIPLE_JUDGE = (
    "You are an AI assistant who will help me to match an answer with several options of a double-choice question. "
    "You are provided with a question, several options, and an answer, and you need to find which two options are "
    "most similar to the answer. If the meaning of all options are significantly different from the answer, output F. "
    "Your should output two uppercase characters in A, B, C, D, E (if they are valid options), and F. \n"
    "Example 1: \nQuestion: What is the main object in image?\nOptions: A. teddy bear B. rabbit C. cat D. dog\n"
    "Answer: a cute teddy bear and a balck cat\nYour output: A, C\nExample 2: \n"
    "Question: What is the main object in image?\nOptions: A. teddy bear B. rabbit C. cat D. dog\nAnswer: Spider\n"
    "Your output: F\nExample 3: \nQuestion: {}?\nOptions: {}\nAnswer: {}\nYour output: "
)


def read_answer(
    response: str, options: Mapping[str, str], multiple: bool, judge_text: str | None = None
) -> tuple[tuple[str, ...], str]:
    """The letters the pipeline ends with, and how it got them (``rule``, ``judge`` or ``fallback``)."""
    prediction = as_prediction_string(response)
    rule = infer_multiple(prediction) if multiple else infer_single(prediction, options)
    if rule:
        return tuple(rule), "rule"
    if judge_text is not None:
        judged = infer_multiple(judge_text) if multiple else infer_single(judge_text, options)
        if judged:
            return tuple(judged), "judge"
    return (fallback_letter(multiple),), "fallback"
