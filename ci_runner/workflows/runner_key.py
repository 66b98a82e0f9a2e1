"""The key a computed ``runs-on`` looks its label up with: ``${{ fromJson(...)[inputs.key] }}``.

SGLang's stage workflows take their runner label from a map built at run time
(``runs-on: ${{ fromJson(fromJson(inputs.check_changes).runs_on_map)[inputs.runner_config] }}``):
the label is unknown before the run, but the key (``inputs.runner_config``, e.g. ``1-gpu-h100``)
is known from the caller's ``with:``. ``--print-matrix`` emits that key, so a workflow can look
the label up the same way.
"""

from __future__ import annotations

from typing import Any

from ci_runner.workflows.expressions import EXPRESSION, UNKNOWN, evaluate, to_text


def runner_key(raw: Any, scope: dict) -> str | None:
    """The known index of a ``runs-on`` expression ``<unknown map>[<key>]``, else None."""
    if not isinstance(raw, str):
        return None
    match = EXPRESSION.fullmatch(raw.strip())
    if match is None:
        return None
    text = match.group(1).strip()
    if not text.endswith("]"):
        return None
    depth = 0
    for index in range(len(text) - 1, -1, -1):
        depth += {"]": 1, "[": -1}.get(text[index], 0)
        if depth == 0:
            inner = text[index + 1 : -1]
            break
    else:
        return None
    try:
        value = evaluate(inner, scope)
    except ValueError:
        return None
    if value is UNKNOWN or isinstance(value, list | dict | bool) or value is None:
        return None
    return to_text(value)
