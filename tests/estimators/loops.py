"""Straightforward per-turn loops that the vectorised estimators are checked against."""

import numpy as np


def returns_loop(episodes, gamma):
    out = []
    for rewards in episodes:
        running, returns = 0.0, [0.0] * len(rewards)
        for t in range(len(rewards) - 1, -1, -1):
            running = rewards[t] + gamma * running
            returns[t] = running
        out.append(returns)
    return out


def rebn_loop(episodes, gamma, eps=1e-6):
    returns = returns_loop(episodes, gamma)
    flat = [g for episode in returns for g in episode]
    mean = sum(flat) / len(flat)
    std = (sum((g - mean) ** 2 for g in flat) / len(flat)) ** 0.5
    return [[(g - mean) / (std + eps) for g in episode] for episode in returns]


def group_loop(episodes, gamma, group_ids, kind, eps=1e-6):
    trajectory = [episode[0] for episode in returns_loop(episodes, gamma)]
    out = []
    for i, episode in enumerate(episodes):
        group = [trajectory[j] for j in range(len(episodes)) if group_ids[j] == group_ids[i]]
        mean = sum(group) / len(group)
        std = (sum((r - mean) ** 2 for r in group) / len(group)) ** 0.5
        if kind == "grpo":
            a = (trajectory[i] - mean) / (std + eps)
        elif kind == "drgrpo":
            a = trajectory[i] - mean
        else:  # rloo
            a = trajectory[i] - (sum(group) - trajectory[i]) / (len(group) - 1)
        out.append([a] * len(episode))
    return out


def place_loop(turn_values, mask):
    """Walk every row token by token, counting turns."""
    out = np.zeros(mask.shape)
    turn = -1
    for row in range(mask.shape[0]):
        previous = 0
        for position in range(mask.shape[1]):
            if mask[row, position] and not previous:
                turn += 1
            if mask[row, position]:
                out[row, position] = turn_values[turn]
            previous = mask[row, position]
    return out
