"""Suite-wide settings. Hypothesis runs without per-example deadlines: CI machines are
shared and slow, and timing is what benchmarks measure, never tests."""

from hypothesis import HealthCheck, settings

settings.register_profile(
    "hyperframes", deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("hyperframes")
