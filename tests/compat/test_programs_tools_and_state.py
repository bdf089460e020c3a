"""The lovia 0.9.119 programs p17 to p30: tools, handoffs, sessions, checkpoints, approvals,
budgets, cancellation and the mailbox. The checks, and why the programs are split, are in
``program_checks.py``."""

from __future__ import annotations

from .program_checks import (
    group,
    live_reference,
    ours_outcomes,
    pytest_generate_tests,
    reference_outcomes,
    test_program_prints_what_0_9_119_prints,
    test_recorded_output_is_what_0_9_119_prints,
)

__all__ = [  # the fixtures and the hook are used by name, the tests are collected here
    "live_reference",
    "ours_outcomes",
    "pytest_generate_tests",
    "reference_outcomes",
    "test_program_prints_what_0_9_119_prints",
    "test_recorded_output_is_what_0_9_119_prints",
]

PROGRAMS = group(1)
