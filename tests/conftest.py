"""Settings for the whole suite.

Hypothesis: no per-example deadline and no "input generation is slow" health
check. The suite must pass on a loaded machine (2 cores shared with other work,
CI beside CPU burners): there, a draw or an example can take seconds for
reasons that say nothing about the code, while the properties stay the same.
Tests that set their own @settings keep them for everything else.
"""

from hypothesis import HealthCheck, settings

settings.register_profile(
    "tide", deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True
)
settings.load_profile("tide")
