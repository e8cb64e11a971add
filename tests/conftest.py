"""Shared pytest configuration: hypothesis profiles and a headless matplotlib backend."""

import os

import matplotlib
from hypothesis import HealthCheck, settings

matplotlib.use("Agg")

# Agreement tests ask for max_examples explicitly (>= 300, see tests/test_*_reference.py);
# this profile only removes the wall-clock deadline, which flakes on a busy 2-core CI box.
settings.register_profile("numalab", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "numalab"))
