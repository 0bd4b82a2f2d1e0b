"""Draws docs/gateway.png, the path from a harness to a trainer through GEM's gateway.

    python scripts/gateway_diagram.py [OUT.png]
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

BOXES = {  # name: (x, y, width, height, label)
    "harness": (0.2, 3.3, 2.6, 1.3, "Agent program\n(Agents SDK, openai loop,\nmini-swe-agent, a command)"),
    "gateway": (4.0, 3.3, 3.0, 1.3, "gem gateway\nsession per key: chain of ids,\nsegments, retries, tool calls"),
    "backend": (8.3, 3.3, 2.6, 1.3, "Backend\nvLLM /v1/completions (ids)\nor GEM's local decoder"),
    "serve": (0.2, 0.9, 2.6, 1.3, "gem serve\n/sessions/{id}/mcp\n(tools: step, ...)"),
    "env": (4.0, 0.9, 3.0, 1.3, "GEM environment\n(wrappers, tools)\nrewards per step"),
    "episode": (8.3, 0.9, 2.6, 1.3, "Episode\nturn per call: Turn.info['sampled']\nprompt, response, logprobs"),
    "trainer": (8.3, -1.5, 2.6, 1.1, "gem train --agent\n(sample per segment, loss\non sampled ids only)"),
}
ARROWS = [  # (from, to, label, from side, to side)
    ("harness", "gateway", "chat.completions\n(messages, tools)", "right", "left"),
    ("gateway", "backend", "prompt ids", "right", "left"),
    ("harness", "serve", "MCP tool calls", "bottom", "top"),
    ("serve", "env", "step(action)", "right", "left"),
    ("gateway", "episode", "calls", "bottom", "top"),
    ("env", "episode", "rewards", "right", "left"),
    ("episode", "trainer", "segments: ids, mask, logprobs", "bottom", "top"),
]


def anchor(box: tuple, side: str) -> tuple[float, float]:
    x, y, w, h, _ = box
    return {"left": (x, y + h / 2), "right": (x + w, y + h / 2), "top": (x + w / 2, y + h),
            "bottom": (x + w / 2, y)}[side]


def draw(out: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyBboxPatch

    fig, ax = plt.subplots(figsize=(11.5, 6.2))
    for name, (x, y, w, h, label) in BOXES.items():
        color = "#dbeafe" if name in ("gateway", "serve", "episode", "trainer") else "#f3f4f6"
        ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.05", facecolor=color, edgecolor="#374151"))
        ax.text(x + w / 2, y + h / 2, label, ha="center", va="center", fontsize=9)
    for start, end, label, side_a, side_b in ARROWS:
        a, b = anchor(BOXES[start], side_a), anchor(BOXES[end], side_b)
        ax.annotate("", xy=b, xytext=a, arrowprops={"arrowstyle": "->", "color": "#1f2937", "lw": 1.4})
        vertical = abs(a[0] - b[0]) < 0.01
        ax.text((a[0] + b[0]) / 2 + (0.12 if vertical else 0), (a[1] + b[1]) / 2 + (0 if vertical else 0.12), label,
                fontsize=8, color="#1f2937", ha="left" if vertical else "center", va="center" if vertical else "bottom")
    ax.set_xlim(-0.2, 11.2)
    ax.set_ylim(-1.8, 4.9)
    ax.axis("off")
    ax.set_title("A harness's episodes, token for token, from GEM's gateway to a trainer", fontsize=11)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


if __name__ == "__main__":
    print(draw(Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / "docs" / "gateway.png"))
