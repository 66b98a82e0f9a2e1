"""Check that ``python <file>`` runs the file's tests and propagates their exit code.

The runner executes every file as ``python <file>`` and judges it by exit code, so a file with an
enabled registration needs an ``if __name__ == "__main__":`` block, and that block must not drop
the result of ``pytest.main(...)`` (a bare ``pytest.main()`` exits 0 even when tests fail).
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable

from ci_runner.collect.calls import iter_nodes
from ci_runner.model import MAIN_BLOCK, Problem

FIX_HINT = 'end the file with: if __name__ == "__main__": sys.exit(pytest.main([__file__, "-v"]))'

# Calls through which a value becomes the exit status.
_EXIT_FUNCTIONS = frozenset({"exit", "quit", "_exit", "SystemExit"})


def _is_main_test(test: ast.expr) -> bool:
    """``__name__ == "__main__"`` in either operand order."""
    if not (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.Eq)
        and len(test.comparators) == 1
    ):
        return False
    sides = (test.left, test.comparators[0])
    has_name = any(isinstance(s, ast.Name) and s.id == "__name__" for s in sides)
    has_main = any(isinstance(s, ast.Constant) and s.value == "__main__" for s in sides)
    return has_name and has_main


def _call_name(call: ast.Call) -> str:
    """``pytest.main`` -> "pytest.main", ``sys.exit`` -> "sys.exit", ``main`` -> "main"."""
    parts: list[str] = []
    node: ast.expr = call.func
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def _is_exit_call(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    return _call_name(node).rsplit(".", 1)[-1] in _EXIT_FUNCTIONS


def _runner_call_name(call: ast.Call) -> str | None:
    """ "pytest.main" or "unittest.main(exit=False)" for calls whose result must be propagated."""
    name = _call_name(call)
    if name == "pytest.main":
        return name
    if name == "unittest.main":
        for keyword in call.keywords:
            if (
                keyword.arg == "exit"
                and isinstance(keyword.value, ast.Constant)
                and keyword.value.value is False
            ):
                return "unittest.main(exit=False)"
    return None


def runs_no_test(tree: ast.Module) -> bool:
    """``python <file>`` runs no test: there is no ``__main__`` block, or none calls anything."""
    blocks = [s for s in tree.body if isinstance(s, ast.If) and _is_main_test(s.test)]
    return not any(
        isinstance(node, ast.Call)
        for block in blocks
        for stmt in block.body
        for node in ast.walk(stmt)
    )


def check_entry_point(tree: ast.Module, rel_path: str, anchor: tuple[int, int]) -> list[Problem]:
    """Problems with the file's ``__main__`` block; ``anchor`` (line, col) locates a missing one."""
    blocks = [s for s in tree.body if isinstance(s, ast.If) and _is_main_test(s.test)]
    if not blocks:
        return [
            Problem(
                rel_path,
                anchor[0],
                anchor[1],
                'enabled registration but no `if __name__ == "__main__":` block, so '
                f"`python {rel_path}` would run no test; {FIX_HINT}",
                lint=True,
                rule=MAIN_BLOCK,
            )
        ]
    problems: list[Problem] = []
    for block in blocks:
        problems.extend(_check_block(block, rel_path))
    return problems


def _check_block(block: ast.If, rel_path: str) -> list[Problem]:
    parents: dict[int, ast.AST] = {}
    nodes: list[ast.AST] = []
    stack: list[ast.AST] = list(block.body)
    while stack:
        node = stack.pop()
        nodes.append(node)
        for name in node._fields:
            value = getattr(node, name, None)
            children = value if isinstance(value, list) else [value]
            for child in children:
                if isinstance(child, ast.AST):
                    parents[id(child)] = node
                    stack.append(child)
    if not any(isinstance(node, ast.Call) for node in nodes):
        return [
            Problem(
                rel_path,
                block.lineno,
                block.col_offset + 1,
                f"the __main__ block calls nothing, so no test runs; {FIX_HINT}",
                lint=True,
                rule=MAIN_BLOCK,
            )
        ]
    runner_calls = [
        (node, runner)
        for node in nodes
        if isinstance(node, ast.Call) and (runner := _runner_call_name(node)) is not None
    ]
    if not runner_calls:
        return []

    @functools.cache
    def exit_names() -> frozenset[str]:
        """Names used inside exit calls and raises of the block (computed only when needed)."""
        return frozenset(
            name.id
            for node in nodes
            if _is_exit_call(node) or isinstance(node, ast.Raise)
            for name in iter_nodes(node)
            if isinstance(name, ast.Name)
        )

    return [
        Problem(
            rel_path,
            node.lineno,
            node.col_offset + 1,
            f"the exit code of {runner} is dropped, so the file exits 0 even when tests "
            f"fail; wrap it: sys.exit({runner.split('(')[0]}(...))",
            lint=True,
        )
        for node, runner in runner_calls
        if not _reaches_exit(node, parents, exit_names)
    ]


def _reaches_exit(
    call: ast.Call, parents: dict[int, ast.AST], exit_names: Callable[[], frozenset[str]]
) -> bool:
    """True when ``call``'s result flows into an exit call, a raise, or a name later exited."""
    node: ast.AST = call
    while id(node) in parents:
        parent = parents[id(node)]
        if _is_exit_call(parent) or isinstance(parent, ast.Raise | ast.Return):
            return True
        if isinstance(parent, ast.Assign | ast.AnnAssign | ast.NamedExpr):
            targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
            return any(
                isinstance(t, ast.Name) and t.id in exit_names()
                for target in targets
                for t in iter_nodes(target)
            )
        if isinstance(parent, ast.stmt):
            return False
        node = parent
    return False
