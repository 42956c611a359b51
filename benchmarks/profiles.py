"""Summarises a py-spy raw profile (collapsed stacks): the share of samples in each
function, self and cumulative, so that docs/performance.md can say where the time goes.

``python -m benchmarks.profiles FILE [N]`` prints the top N (default 12) of each.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path


def summarise(path: Path, top: int = 12) -> str:
    """The top ``top`` functions by self and by cumulative share of the samples."""
    own: Counter[str] = Counter()
    total: Counter[str] = Counter()
    samples = 0
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack:
            continue
        n = int(count)
        samples += n
        frames = [
            f.split(" (")[0] + " (" + f.split(" (")[1].split(":")[0].rsplit("/", 1)[-1] + ")"
            if " (" in f
            else f
            for f in stack.split(";")
        ]
        own[frames[-1]] += n
        for frame in set(frames):
            total[frame] += n
    lines = [f"{samples} samples", "self:"]
    lines += [f"  {100 * n / samples:5.1f}%  {name}" for name, n in own.most_common(top)]
    lines.append("cumulative:")
    lines += [f"  {100 * n / samples:5.1f}%  {name}" for name, n in total.most_common(top)]
    return "\n".join(lines)


if __name__ == "__main__":
    print(summarise(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 12))
