"""How long `liz --help` and one shell-completion TAB take, against a bare Python start.

    .venv/bin/python bench/cli_startup.py [--runs 20]

Each command runs as its own process, as a shell would run it; the floor is
`python -c pass` on the same interpreter, timed in the same loop.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

LIZ = str(Path(sys.executable).with_name("liz"))
COMPLETION = {"_LIZ_COMPLETE": "complete_bash", "COMP_WORDS": "liz fa", "COMP_CWORD": "1"}
CASES = {
    "python -c pass (floor)": ([sys.executable, "-c", "pass"], {}),
    "liz --help": ([LIZ, "--help"], {}),
    "liz facts --help": ([LIZ, "facts", "--help"], {}),
    "TAB completion (liz fa<TAB>)": ([LIZ], COMPLETION),
}


def timed(command: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, env={**os.environ, **env}, capture_output=True, check=False)
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=20)
    runs = parser.parse_args().runs
    samples: dict[str, list[float]] = {name: [] for name in CASES}
    for _ in range(runs):  # interleaved, so machine noise hits every case alike
        for name, (command, env) in CASES.items():
            samples[name].append(timed(command, env))
    floor = statistics.median(samples["python -c pass (floor)"])
    print(f"| command | p50 ms | p95 ms | p50 minus floor ms |  ({runs} runs)")
    print("|---|---|---|---|")
    for name, values in samples.items():
        values.sort()
        p50 = statistics.median(values)
        p95 = values[min(len(values) - 1, round(0.95 * (len(values) - 1)))]
        print(f"| {name} | {p50:.0f} | {p95:.0f} | {p50 - floor:.0f} |")


if __name__ == "__main__":
    main()
