"""A scripted player shared by the adapter stages whose library keeps the whole conversation in one
prompt (RL2, oat with the concat_chat wrapper)."""

from __future__ import annotations

import re


def bisection(prompt: str) -> str:
    """Plays Guess The Number (1 to 10) by bisection, from the conversation so far: each earlier
    guess and the 'higher'/'lower' that followed it. Episodes with the same first prompt can thus
    interleave."""
    low, high = 1, 10
    for turn in prompt.split("<|im_start|>assistant\n")[1:-1]:  # the answered turns
        answer, _, feedback = turn.partition("<|im_start|>user")
        guess = int(re.findall(r"\\boxed\{(\d+)\}", answer)[-1])
        if "higher" in feedback.lower():
            low = guess + 1
        elif "lower" in feedback.lower():
            high = guess - 1
    return f"I guess \\boxed{{{(low + high) // 2}}}."
