"""`python -m axon.targets.xe_triton.kb --check [--kb FOLDER]`: check the knowledge base.

Reads every device and pattern file (the shipped KB, or the one in FOLDER) and prints a summary
(devices, patterns, sources) with exit status 0, or the first mistake as
`file:line:col: error: message` with exit status 1.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from axon.targets.profiles import ProfileError
from axon.targets.xe_triton.kb import KB_DIR, load_kb


def main(argv: list[str] | None = None) -> int:
    """Run the check command; the exit status."""
    parser = argparse.ArgumentParser(prog="python -m axon.targets.xe_triton.kb",
                                     description="Check the Intel Xe / Triton knowledge base.")
    parser.add_argument("--check", action="store_true", required=True,
                        help="read and check every device and pattern file")
    parser.add_argument("--kb", type=Path, default=KB_DIR,
                        help="a KB folder holding devices/ and patterns/ (default: the shipped)")
    args = parser.parse_args(argv)
    try:
        kb = load_kb(args.kb)
    except ProfileError as err:
        print(err, file=sys.stderr)
        return 1
    numbers = [q for d in kb.devices.values() for q in d.quantities().values()]
    estimates = sum(q.estimate for q in numbers)
    print(f"devices: {len(kb.devices)} ({', '.join(sorted(kb.devices))})")
    print(f"patterns: {len(kb.patterns)} ({', '.join(p.id for p in kb.patterns)})")
    print(f"numbers: {len(numbers)} sourced quantities, {estimates} of them estimates")
    print(f"sources: {len(kb.sources())} distinct")
    return 0


if __name__ == "__main__":
    sys.exit(main())
