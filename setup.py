"""Build hook for the optional C kernel; pyproject.toml holds the metadata.

`tide.sim._countsim` (src/tide/sim/_countsim.c) runs the twin's count driver
about 100x faster than the Python one. It is optional: when there is no C
compiler or no Python headers the build goes on without it and tide uses the
pure-Python driver, with the same results.

`tide.sched._plan` (src/tide/sched/_plan.c) finds a one-node backfill
reservation (tide.sched.reserve); optional the same way, the core falls back
to numpy with the same results.
"""

import os
import sys

from setuptools import Extension, setup

# no contraction into FMA: the C loop must round exactly as the Python one
FLAGS = [] if sys.platform == "win32" else ["-O2", "-ffp-contract=off", "-fno-fast-math"]

OPTIONAL = os.environ.get("TIDE_REQUIRE_C") != "1"

exts = [
    Extension(name, sources=[source], extra_compile_args=FLAGS, optional=OPTIONAL)
    for name, source in (
        ("tide.sim._countsim", "src/tide/sim/_countsim.c"),
        ("tide.sched._plan", "src/tide/sched/_plan.c"),
    )
]

setup(ext_modules=exts)
