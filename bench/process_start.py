"""What a fresh process pays to start: `django.setup()`, then the system checks (what
`manage.py check` and the release run; workers skip them: they load the URLconf, the
API and every middleware), each in new interpreters.

Prints one line per workload: the modules it has loaded, and its CPU (user + system) as
the best and the median of N processes; the checks' line gives its ratio to setup. CPU,
not wall time: the machine is shared, and the best of N is the least disturbed figure.

    DATABASE_URL=postgres://… .venv/bin/python bench/process_start.py [N]
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SETUP = "import sys, django; django.setup()"
WORKLOADS = {
    "django.setup()": SETUP,
    "setup + system checks": f"{SETUP}; from django.core.checks import run_checks; run_checks()",
}


def cpu_and_modules(code: str) -> tuple[float, int]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        [sys.executable, "-c", f"{code}; print(len(sys.modules))"],
        cwd=ROOT,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "aihummer.settings"},
        capture_output=True,
        text=True,
        check=True,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return cpu, int(done.stdout.split()[-1])


def main(runs: int) -> None:
    print(f"{'workload':<24} {'modules':>8} {'CPU best':>9} {'median':>8}  (s, {runs} processes each)")
    setup_best = None
    for name, code in WORKLOADS.items():
        figures = [cpu_and_modules(code) for _ in range(runs)]
        best = min(cpu for cpu, _ in figures)
        median = statistics.median(cpu for cpu, _ in figures)
        ratio = f"  x{best / setup_best:.2f} of setup" if setup_best else ""
        print(f"{name:<24} {figures[0][1]:>8} {best:>9.3f} {median:>8.3f}{ratio}")
        setup_best = setup_best or best
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 7)
