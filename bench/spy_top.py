"""Where the samples of py-spy's folded output (`py-spy record --format raw`, what
`bench/workflows.py --profile DIR` writes) go: the functions by own samples and by
inclusive samples, as a share of the samples of busy threads (idle waits excluded:
py-spy records only running threads by default).

`.venv/bin/python bench/spy_top.py DIR/A-1w-echo-3-0.txt [--top 40] [--under workflow_step_run]`
"""

from __future__ import annotations

import argparse
import re
from collections import Counter

FRAME = re.compile(r"^(?P<function>[^ ]+) \((?P<file>[^:]+)(?::\d+)?\)$")


def short(frame: str) -> str:
    match = FRAME.match(frame.strip())
    if not match:
        return frame.strip()
    path = match["file"].split("site-packages/")[-1].split("/work/")[-1]
    return f"{match['function']} ({path})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="+")
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--under", help="only stacks through a function of this name")
    args = parser.parse_args()
    own, inclusive, total = Counter(), Counter(), 0
    for name in args.files:
        with open(name) as lines:
            for line in lines:
                stack, _, count = line.rstrip("\n").rpartition(" ")
                if not count.isdigit():
                    continue
                frames = [short(frame) for frame in stack.split(";")]
                if args.under and not any(frame.startswith(args.under + " ") for frame in frames):
                    continue
                total += int(count)
                own[frames[-1]] += int(count)
                for frame in set(frames):
                    inclusive[frame] += int(count)
    print(f"{total} samples")
    for title, counter in (("own", own), ("inclusive", inclusive)):
        print(f"\n--- {title}")
        for frame, count in counter.most_common(args.top):
            print(f"{100 * count / total:6.1f}%  {frame}")


if __name__ == "__main__":
    main()
