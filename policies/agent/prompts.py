"""The role prompts of SpatialAgent, after SpatialScore Appendix B.3 (pinned by snapshot tests).

Plan-Execute: planner -> (tools run) -> executor (a chain of thought over the tool results) -> summarizer;
after ``max_attempts`` failed plans, the direct-answer prompt. ReAct: the observer decides one action at a
time; each tool result comes back as an OBSERVATION turn (the executor step) until ``Terminate``; the
summarizer then sees ALL_OBSERVATION and calls ``Terminate`` with the final answer.

Differences from the paper's text, and why: images are named ``image-0``, ``image-1``... in every prompt
(the paper's planner says so, its ReAct prompts ask for file paths, which the tools here do not take); the
observer's worked examples use this toolbox's tools; the "indoor scenes: answer without tools" advice of the
paper's ReAct examples is left out (it tunes the paper's learned tools, not a property of the task).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

PLANNER_GOAL = "[BEGIN OF GOAL] Generate a JSON-formatted tool-calling plan to solve spatial understanding questions about given images or videos. [END OF GOAL]"
EXECUTOR_GOAL = "[BEGIN OF GOAL] Generate a Chain of Thought (CoT) reasoning process using the provided tool execution results. [END OF GOAL]"
SUMMARIZER_GOAL = "[BEGIN OF GOAL] Generate a final REASONING and ANSWER for spatial understanding questions about given images or videos, based on tool results and prior Chain of Thought (CoT) steps. [END OF GOAL]"
DIRECT_GOAL = "[BEGIN OF GOAL] Provide a direct ANSWER to a spatial understanding question about given 2D images or videos without external tools. [END OF GOAL]"
OBSERVER_GOAL = "[BEGIN OF GOAL] You are a helpful assistant, and your goal is to solve the # USER REQUEST #. You can either rely on your own capabilities or perform actions with external tools to help you. A list of all available actions is provided to you below. [END OF GOAL]"
OBSERVATION_HEAD = "OBSERVATION:"
ALL_OBSERVATION_HEAD = "ALL_OBSERVATION:"

_ANSWER_RULES = (
    "For multi-choice questions, select the most appropriate answer from options based on reasoning. Respond ONLY with "
    "the capital letter and its parentheses. For judgment questions, answer with yes or no based on reasoning. Respond "
    "ONLY with 'yes' or 'no'. For open-ended measurement questions, answer the question by measuring the precise "
    "distance in 3D space through 2D images or videos. DO NOT use generic and unclear units like 'units' or 'pixels'. "
    "Respond ONLY with a numeric answer consisting of a scalar and a distance unit in the format of **scalar "
    "distance_unit**. For other questions, answer the question based on the given image or video. Respond ONLY with a "
    "concise and accurate scalar or a scalar with corresponding unit."
)
_ALWAYS = "**CRITICAL: You MUST always provide a reasonable answer. Never respond with 'cannot be determined', 'none of the above', or similar phrases.**"


def images_line(n_images: int) -> str:
    """How the prompt names the images the model is shown."""
    return "Images: " + ", ".join(f"image-{i}" for i in range(n_images)) + "."


def planner(question: str, toolbox: str, n_images: int, retry_note: str | None = None) -> str:
    """Φ_plan: a JSON list of tool calls (Eq. 3). ``retry_note`` tells a later attempt why the last one failed."""
    parts = [
        PLANNER_GOAL,
        f"[BEGIN OF TOOLBOX]\n{toolbox}\n[END OF TOOLBOX]",
        "[BEGIN OF TASK INSTRUCTIONS] Generate a step-by-step plan to answer the given spatial understanding question "
        "about given images or videos. ***Use ONLY the tools listed in the TOOLBOX section.*** ***Follow their argument "
        "specifications EXACTLY as defined in the toolbox, and try to give detailed and comprehensive instructions in "
        "queries.*** Do NOT invent new tools or modify the existing tool interfaces. The plan should strictly follow "
        "what these tools can and cannot do. [END OF TASK INSTRUCTIONS]",
        "[BEGIN OF FORMAT INSTRUCTIONS] You are a helpful assistant tasked with solving spatial reasoning questions. "
        "Think step by step. *** Return a JSON list of tool calls inside ```json``` tags, where each call is a dictionary "
        "with 'name' and 'arguments'. The 'name' MUST match exactly one of the tool names provided in the toolbox. The "
        "'arguments' MUST include ALL required parameters for that specific tool with EXACT parameter names. The "
        "'images' or 'image' argument must be specified as 'image-0', 'image-1', ... to refer to the provided images. "
        "Do not answer the question directly. *** [END OF FORMAT INSTRUCTIONS]",
        "[BEGIN OF EXAMPLES] Example for 'Which is closer to the camera, the dog or the cat?': ```json\n"
        '[{"name": "EstimateObjectDepth", "arguments": {"image": "image-0", "objects": ["dog", "cat"]}}]\n```'
        " [END OF EXAMPLES]",
        images_line(n_images),
        f"Question: {question}",
    ]
    if retry_note:
        parts.append(
            f"Your previous plan could not be used ({retry_note}). Write the plan again, exactly in the format asked."
        )
    parts.append(
        "*** Do not answer the question directly. Instead, think step-by-step, and output the tool-calling plan inside ```json``` tags. ***"
    )
    return "\n".join(parts)


def executor(
    question: str, plan: Sequence[dict[str, Any]], results: Sequence[dict[str, Any]], n_images: int
) -> str:
    """Φ_exec of Plan-Execute: a chain of thought over the executed plan's results (Eq. 4)."""
    return "\n".join(
        [
            EXECUTOR_GOAL,
            "[BEGIN OF TASK INSTRUCTIONS] You are a helpful assistant tasked with solving spatial reasoning questions. "
            "Analyze the given question and tool execution results. Think step by step. Generate a step-by-step reasoning "
            "process that shows how the tools contribute to solving the question. Use ONLY the tools and results provided. "
            "The results of tool calls can sometimes be incomplete or incorrect, so please be critical and decide how to "
            "make use of them. If a tool failed, note the failure and proceed with your prior knowledge and reasoning. "
            "Repeat for each tool result in order. [END OF TASK INSTRUCTIONS]",
            "[BEGIN OF FORMAT INSTRUCTIONS] *** Output a CoT with: - <thinking> Explain why this tool was used and how its "
            "result contributes to the answer. </thinking> - <tool> The tool call in JSON format. </tool> - <observation> "
            "The tool result as a string. </observation> Repeat for each tool result in order. *** [END OF FORMAT INSTRUCTIONS]",
            images_line(n_images),
            f"Question: {question}",
            f"Tool Plan: {_dump(plan)}",
            f"Tool Results: {_dump(results)}",
            "*** **Notably, you should AVOID outputting terms like <final_thinking>, <answer>, or <final_answer> here.** "
            "**Now, output your reasoning between <thinking> and </thinking>, the tool call in JSON format between <tool> "
            "and </tool>, and the observation between <observation> and </observation>.** ***",
        ]
    )


def summarizer(question: str, results: Sequence[dict[str, Any]], cot: str, n_images: int) -> str:
    """Φ_sum of Plan-Execute: the final answer from the tool results and the chain of thought (Eq. 5)."""
    return "\n".join(
        [
            SUMMARIZER_GOAL,
            "[BEGIN OF TASK INSTRUCTIONS] You are a helpful assistant tasked with solving spatial reasoning questions. Given "
            "the question, tool execution results, and CoT steps, synthesize the information to provide a final REASONING "
            "and ANSWER. **The results of tool calls can sometimes be incomplete or incorrect, so please be critical and "
            "decide how to make use of them.** If tool results are unclear or contradictory, use your prior knowledge to "
            f"think the problem step-by-step. {_ANSWER_RULES} {_ALWAYS} [END OF TASK INSTRUCTIONS]",
            "[BEGIN OF FORMAT INSTRUCTIONS] *** Output: - <thinking> A complete analysis synthesizing all tool results and "
            "CoT steps to derive the answer. </thinking> - <answer> **The final answer** </answer> *** [END OF FORMAT INSTRUCTIONS]",
            images_line(n_images),
            f"Question: {question}",
            f"Tool Results: {_dump(results)}",
            f"CoT Steps: {cot}",
            "Now, output **your thinking** between <thinking> and </thinking>, and **your answer** between <answer> and </answer>.",
        ]
    )


def direct(question: str, n_images: int) -> str:
    """The fallback after ``max_attempts`` failed plans, or when the summarizer gave no answer: no tools."""
    return "\n".join(
        [
            DIRECT_GOAL,
            "[BEGIN OF TASK INSTRUCTIONS] You are a helpful assistant tasked with solving spatial reasoning questions. Think "
            "step by step. Answer the spatial understanding question by reasoning about the provided images or videos. "
            f"{_ALWAYS} *** {_ANSWER_RULES} *** [END OF TASK INSTRUCTIONS]",
            "[BEGIN OF FORMAT INSTRUCTIONS] *** Output your response in the format: <thinking> [Your reasoning here] "
            "</thinking> <answer> [Your final answer] </answer> *** [END OF FORMAT INSTRUCTIONS]",
            images_line(n_images),
            f"Question: {question}",
            "Now, output **your thinking** between <thinking> and </thinking>, and **your answer** between <answer> and </answer>.",
        ]
    )


_REACT_EXAMPLES = [
    {
        "user_request": "Between image-0 and image-1, how did the camera move? (A) The camera moved to the right (B) The camera moved to the left",
        "steps": [
            {
                "thought": "The relative camera pose tells how the camera moved between the two images.",
                "actions": [{"name": "GetCameraParameters", "arguments": {"images": ["image-0", "image-1"]}}],
                "observation": {
                    "output": [
                        {"image_index": 1, "extrinsic": [[1, 0, 0, -0.6], [0, 1, 0, 0], [0, 0, 1, 0]]}
                    ],
                    "translation_scale": "metric",
                },
            },
            {
                "thought": "The centre of image-1's camera in the first camera's frame is -R^T t = [0.6, 0, 0]: it moved 0.6 m right; the answer is (A).",
                "actions": [{"name": "Terminate", "arguments": {"answer": "(A)"}}],
                "observation": {},
            },
        ],
    },
    {
        "user_request": "Which is closer to the camera, the dog or the cat? (A) dog (B) cat",
        "steps": [
            {
                "thought": "Depth of each object answers it.",
                "actions": [
                    {
                        "name": "EstimateObjectDepth",
                        "arguments": {"image": "image-0", "objects": ["dog", "cat"]},
                    }
                ],
                "observation": {
                    "results": [
                        {"object": "dog", "depth": 1.0, "error": None},
                        {"object": "cat", "depth": 1.2, "error": None},
                    ]
                },
            },
            {
                "thought": "The dog (1.0 m) is closer than the cat (1.2 m).",
                "actions": [{"name": "Terminate", "arguments": {"answer": "(A)"}}],
                "observation": {},
            },
        ],
    },
]


def observer(request: str, toolbox: str, n_images: int) -> str:
    """Φ_obs of ReAct: the first turn; the decisions and observations follow as turns of the same conversation."""
    return "\n".join(
        [
            f"USER REQUEST: {request}",
            images_line(n_images),
            OBSERVER_GOAL,
            f"[BEGIN OF ACTIONS]\n{toolbox}\n[END OF ACTIONS]",
            "[BEGIN OF TASK INSTRUCTIONS] 1. You must only select actions from # ACTIONS #. 2. You can only call one action "
            'at a time. 3. If no action is needed, please make actions an empty list (i.e., "actions": []). 4. You must '
            "always call **Terminate** with your final answer at the end. [END OF TASK INSTRUCTIONS]",
            "[BEGIN OF TOOL USAGE INSTRUCTIONS] 1. Refer to images as 'image-0', 'image-1', ... 2. For counting problems, use "
            "CountObjects; the number of returned points equals the number of objects. 3. For camera-motion problems, use "
            "GetCameraParameters. 4. **DO NOT** invent or mention any tool that is not defined in # ACTIONS #, and **DO NOT** "
            "fabricate tool results you have not obtained. 5. If a tool result contains ambiguous references (e.g. several "
            "boxes for one object), the result is unreliable: rely on reasoning instead. 6. If the tool chain becomes too "
            "long, stop calling tools and call Terminate. [END OF TOOL USAGE INSTRUCTIONS]",
            '[BEGIN OF FORMAT INSTRUCTIONS] Your output should be in a strict JSON format as follows: {"thought": "the '
            'thought process, or an empty string", "actions": [{"name": "action1", "arguments": {"argument1": '
            '"value1"}}]} [END OF FORMAT INSTRUCTIONS]',
            f"[BEGIN OF EXAMPLES] {json.dumps(_REACT_EXAMPLES, ensure_ascii=False)} [END OF EXAMPLES]",
        ]
    )


def observation(result: dict[str, Any]) -> str:
    """Φ_exec of ReAct: one tool result handed back to the observer (Eq. 7)."""
    return (
        f"{OBSERVATION_HEAD} {_dump(result)} The OBSERVATION can be incomplete or incorrect, so please be critical "
        "and decide how to make use of it. If you've gathered sufficient information to answer the question, call "
        "**Terminate** with the final answer. Now, please generate the response for the next step."
    )


def react_summarizer(memory: Sequence[dict[str, Any]]) -> str:
    """Φ_sum of ReAct: every (decision, result) pair, ending in a ``Terminate`` call (Eq. 8)."""
    return (
        f"{ALL_OBSERVATION_HEAD} {_dump(memory)} The ALL_OBSERVATION can be incomplete or incorrect, so please be "
        "critical and decide how to make use of it. Call **Terminate** with the final answer. Now, please generate "
        "the response for the next step."
    )


def _dump(value: object) -> str:
    """Stable JSON (keys in insertion order, non-ASCII kept) for tool plans and results in prompts."""
    return json.dumps(value, ensure_ascii=False, default=str)
