"""How much of a package's code carries type annotations: the share of functions that annotate
their return, and the share whose parameters are all annotated.

    python -m tools.annotation_counts [DIR ...]      (default: build_steps)

Read with ``ast`` (nothing is imported). Every ``def`` counts, methods and nested functions
included. A method's first parameter (``self``/``cls``) is never annotated by convention, so it is
left out; the parameter share counts only functions that have some other parameter (a function
without any is neither typed nor untyped there), ``*args``/``**kwargs`` included.
"""
from __future__ import annotations

import argparse
import ast
import sys
from dataclasses import dataclass
from pathlib import Path

HARNESS_ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Counts:
    functions: int = 0
    returns: int = 0
    with_params: int = 0
    params: int = 0

    def add(self, other: Counts) -> None:
        self.functions += other.functions
        self.returns += other.returns
        self.with_params += other.with_params
        self.params += other.params

    def line(self, name: str) -> str:
        ret = 100 * self.returns / self.functions if self.functions else 100.0
        par = 100 * self.params / self.with_params if self.with_params else 100.0
        return (f"{name:<40} {self.functions:>5} functions  return {ret:5.1f}% ({self.returns})  "
                f"parameters {par:5.1f}% ({self.params}/{self.with_params})")


def _parameters(fn: ast.FunctionDef | ast.AsyncFunctionDef, is_method: bool) -> list[ast.arg]:
    a = fn.args
    positional = [*a.posonlyargs, *a.args]
    is_static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in fn.decorator_list)
    if is_method and positional and not is_static:
        positional = positional[1:]
    extra = [x for x in (a.vararg, a.kwarg) if x is not None]
    return [*positional, *a.kwonlyargs, *extra]


def count_source(text: str, filename: str = "<text>") -> Counts:
    """The counts of one module's source."""
    out = Counts()

    def visit(node: ast.AST, in_class: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out.functions += 1
                out.returns += child.returns is not None
                params = _parameters(child, in_class)
                if params:
                    out.with_params += 1
                    out.params += all(p.annotation is not None for p in params)
                visit(child, False)
            elif isinstance(child, ast.ClassDef):
                visit(child, True)
            else:
                visit(child, in_class)

    visit(ast.parse(text, filename=filename), False)
    return out


def count_tree(root: Path) -> dict[str, Counts]:
    """Module path (relative to ``root``'s parent) -> its counts, for every .py file under ``root``."""
    return {str(p.relative_to(root.parent)): count_source(p.read_text(), str(p))
            for p in sorted(root.rglob("*.py"))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dirs", nargs="*", default=["build_steps"], help="package directories (default: build_steps)")
    parser.add_argument("--per-module", action="store_true", help="one line per module as well")
    args = parser.parse_args(argv)
    for d in args.dirs:
        root = Path(d) if Path(d).is_absolute() else HARNESS_ROOT / d
        if not root.is_dir():
            print(f"{root}: not a directory; pass a package directory such as build_steps", file=sys.stderr)
            return 2
        total = Counts()
        for name, c in count_tree(root).items():
            total.add(c)
            if args.per_module:
                print(c.line(name))
        print(total.line(f"{d} (all modules)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
