"""``retry-on = "output-patterns"``: SGLang's rule for which failures are worth a retry.

A failed attempt's output decides, checked in this order (case-insensitive searches, except the
final bare ``AssertionError``):

1. a device-resource flake (``UR_RESULT_ERROR_OUT_OF_RESOURCES``, ``XPU out of memory``,
   ``Server failed to start within the timeout``): retry;
2. a code or environment error (``SyntaxError``, ``ImportError``, ``TypeError``,
   ``RuntimeError``, ``CUDA out of memory``, ``Segmentation fault``, ...): do not retry;
3. an accuracy or performance symptom (``AssertionError: ... not greater than``, ``accuracy``,
   ``score``, ``latency``, ``throughput``, ``timeout``, ...): retry;
4. any other ``AssertionError``: retry; anything else: do not retry.

These are the behaviour of SGLang's ``ci_utils.is_retriable_failure`` (main, 2026-08-18),
restated so that an adopting repository keeps its retry decisions.
"""

from __future__ import annotations

import re


def _any_case(*texts: str) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(text, re.IGNORECASE) for text in texts)


DEVICE_FLAKES = _any_case(
    r"UR_RESULT_ERROR_OUT_OF_RESOURCES",
    r"XPU out of memory",
    r"Server failed to start within the timeout",
)
CODE_ERRORS = _any_case(
    r"SyntaxError",
    r"ImportError",
    r"ModuleNotFoundError",
    r"NameError",
    r"TypeError",
    r"AttributeError",
    r"RuntimeError",
    r"CUDA out of memory",
    r"OOM",
    r"Segmentation fault",
    r"core dumped",
    r"ConnectionRefusedError",
    r"FileNotFoundError",
)
MEASUREMENT_SYMPTOMS = _any_case(
    r"AssertionError:.*not greater than",
    r"AssertionError:.*not less than",
    r"AssertionError:.*not equal to",
    r"AssertionError:.*!=.*expected",
    r"accuracy",
    r"score",
    r"latency",
    r"throughput",
    r"timeout",
)
_ANY_ASSERTION = re.compile(r"AssertionError")


def output_retry_verdict(output: str) -> tuple[bool, str]:
    """(retry?, the rule that decided) for a failed attempt's output."""
    for rules, retry, label in (
        (DEVICE_FLAKES, True, "device-resource flake"),
        (CODE_ERRORS, False, "code error"),
        (MEASUREMENT_SYMPTOMS, True, "accuracy/performance symptom"),
    ):
        for rule in rules:
            if rule.search(output):
                return retry, f"{label}: output matches {rule.pattern!r}"
    if _ANY_ASSERTION.search(output):
        return True, "an AssertionError (treated as an accuracy/performance symptom)"
    return False, "output matches no retriable pattern"
