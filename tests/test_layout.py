"""The layout rules of the package (issue #19), checked on the source tree.

`layout_violations(package_dir)` reads every module of a package with `ast` (nothing is
imported) and reports each broken rule:

  * no-jax: modules under `grammars/` and `engine/` import neither JAX (jax, jaxlib, flax)
    nor a jaxguide module outside `grammars/`, `engine/` and `errors.py` (so, with the first
    part, nothing they import can pull JAX in);
  * native: only `engine/_core.py` imports the extension `jaxguide._native`;
  * cycle: the graph of jaxguide-internal imports has no cycle (every import statement counts,
    function-local ones too; `if TYPE_CHECKING:` blocks do not);
  * local-import: jaxguide modules are imported at module level, where the data flow shows
    (a function-local import hides it, and can hide a cycle);
  * private: no name starting with `_` (nor a private module) is imported from a module of
    another subpackage;
  * size: no function over MAX_FUNCTION_LINES lines, no file over MAX_FILE_LINES lines.

`native_function_violations` applies the function size rule to native/python/*.cc (a function
runs from a line that opens it at column 0 to the next `}` at column 0).

The test of the checker builds a small package that breaks each rule once and asserts that each
break is reported, so a checker that stopped seeing a rule fails. `test_import_without_jax` runs
a subprocess in which importing JAX fails, and compiles and runs a grammar there.
"""

from __future__ import annotations

import ast
import pathlib
import subprocess
import sys
import textwrap

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "jaxguide"
JAX_MODULES = ("jax", "jaxlib", "flax")
JAX_FREE = ("grammars", "engine")
JAX_FREE_MAY_IMPORT = ("grammars", "engine", "errors")
MAX_FUNCTION_LINES = 80
MAX_FILE_LINES = 800


def _module_name(package_dir: pathlib.Path, path: pathlib.Path) -> str:
    parts = list(path.relative_to(package_dir.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _subpackage(module: str) -> str:
    """`jaxguide.engine.matcher` -> "engine"; a module of the package root -> its own name."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.Module, module: str, is_package: bool):
    """(imported module, names, line, in a function) for each import, relative ones resolved."""
    found = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                continue
            inside = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            if isinstance(child, ast.Import):
                found.extend((a.name, (), child.lineno, in_function) for a in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    anchor = module.split(".")[:len(module.split(".")) - child.level +
                                                 (1 if is_package else 0)]
                    base = ".".join(anchor + ([base] if base else []))
                names = tuple(a.name for a in child.names)
                found.append((base, names, child.lineno, in_function))
            visit(child, inside)

    visit(tree, False)
    return found


def layout_violations(package_dir: pathlib.Path) -> list[str]:
    """Every broken layout rule in the package at `package_dir` (see the module docstring)."""
    root = package_dir.name
    modules = {}
    for path in sorted(package_dir.rglob("*.py")):
        modules[_module_name(package_dir, path)] = path
    violations = []
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for module, path in modules.items():
        text = path.read_text()
        where = path.relative_to(package_dir.parent)
        tree = ast.parse(text)
        violations += _size_violations(tree, text, where)
        sub = _subpackage(module)
        for target, names, line, in_function in _imports(tree, module,
                                                         path.name == "__init__.py"):
            at = f"{where}:{line}"
            if target.split(".")[0] in JAX_MODULES and sub in JAX_FREE:
                violations.append(f"no-jax: {at} imports {target}")
            if target.split(".")[0] != root:
                continue
            candidates = [target] + [f"{target}.{n}" for n in names]
            # `from a import b` imports module a.b if there is one, else reads a name of a.
            submodules = [f"{target}.{n}" for n in names
                          if f"{target}.{n}" in modules or f"{target}.{n}" == f"{root}._native"]
            for t in submodules + ([target] if len(submodules) < len(names) or not names
                                   else []):
                if t != module and t in modules:
                    graph[module].add(t)
            if f"{root}._native" in candidates:
                if module != f"{root}.engine._core":
                    violations.append(f"native: {at} imports {root}._native (only "
                                      "engine/_core.py may)")
                continue
            target_sub = _subpackage(target)
            if sub in JAX_FREE and target_sub and target_sub not in JAX_FREE_MAY_IMPORT:
                violations.append(f"no-jax: {at} ({sub}/) imports {target}")
            if in_function:
                violations.append(f"local-import: {at} imports {target} inside a function")
            if target_sub != sub:
                private = [n for n in names if n.startswith("_")] + [
                    part for part in target.split(".")[1:] if part.startswith("_")]
                if private:
                    violations.append(f"private: {at} imports {', '.join(private)} from "
                                      f"{target}")
    violations += [f"cycle: {' -> '.join(cycle)}" for cycle in _cycles(graph)]
    return violations


def _size_violations(tree: ast.Module, text: str, where: pathlib.Path) -> list[str]:
    out = []
    lines = len(text.splitlines())
    if lines > MAX_FILE_LINES:
        out.append(f"size: {where} has {lines} lines (> {MAX_FILE_LINES})")
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = node.end_lineno - node.lineno + 1
            if length > MAX_FUNCTION_LINES:
                out.append(f"size: {where}:{node.lineno} {node.name} has {length} lines "
                           f"(> {MAX_FUNCTION_LINES})")
    return out


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component with more than one module (or a self loop)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles = []

    def connect(node: str) -> None:  # Tarjan's algorithm (graphs here have < 100 nodes)
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in sorted(graph[node]):
            if succ not in index:
                connect(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component) + [sorted(component)[0]])

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return cycles


def native_function_violations(source: pathlib.Path) -> list[str]:
    out = []
    lines = source.read_text().splitlines()
    start = None
    for number, line in enumerate(lines, 1):
        if start is None and line and not line[0].isspace() and line.rstrip().endswith("{") \
                and "(" in line and not line.startswith(("namespace", "struct", "class")):
            start = number
        elif start is not None and line.startswith("}"):
            if number - start + 1 > MAX_FUNCTION_LINES:
                out.append(f"size: {source.name}:{start} has {number - start + 1} lines "
                           f"(> {MAX_FUNCTION_LINES})")
            start = None
    if len(lines) > MAX_FILE_LINES:
        out.append(f"size: {source.name} has {len(lines)} lines (> {MAX_FILE_LINES})")
    return out


def test_package_layout_rules_hold():
    assert layout_violations(PACKAGE) == []


def test_bindings_functions_are_short():
    sources = sorted((ROOT / "native" / "python").glob("*.cc"))
    assert sources
    assert [v for s in sources for v in native_function_violations(s)] == []


BROKEN_PACKAGE = {
    "__init__.py": "",
    "errors.py": "",
    "_native.py": "",
    "grammars/__init__.py": "",
    # no-jax (twice: JAX itself, and a module of a JAX subpackage), local-import
    "grammars/front.py": "import jax\nfrom pkg.device import queue\n\n\n"
                         "def f():\n    from pkg.engine import core\n",
    "engine/__init__.py": "",
    "engine/_core.py": "from pkg import _native\n",
    "engine/core.py": "from pkg import _native\nfrom pkg.engine._core import _native as n\n",
    "device/__init__.py": "",
    # private: a private module and a private name of another subpackage; cycle a <-> queue
    "device/queue.py": "from pkg.engine._core import x\nfrom pkg.engine.core import _helper\n"
                       "from pkg.device import a\n",
    "device/a.py": "from pkg.device.queue import Queue\n",
    # size
    "device/long.py": "def long():\n" + "    x = 1\n" * MAX_FUNCTION_LINES,
}


def test_layout_checker_reports_each_broken_rule(tmp_path):
    package = tmp_path / "pkg"
    for name, text in BROKEN_PACKAGE.items():
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text(text)
    found = layout_violations(package)
    expected = [
        "no-jax: pkg/grammars/front.py:1 imports jax",
        "no-jax: pkg/grammars/front.py:2 (grammars/) imports pkg.device",
        "local-import: pkg/grammars/front.py:6 imports pkg.engine inside a function",
        "native: pkg/engine/core.py:1 imports pkg._native (only engine/_core.py may)",
        "private: pkg/device/queue.py:1 imports _core from pkg.engine._core",
        "private: pkg/device/queue.py:2 imports _helper from pkg.engine.core",
        "cycle: pkg.device.a -> pkg.device.queue -> pkg.device.a",
        f"size: pkg/device/long.py:1 long has {MAX_FUNCTION_LINES + 1} lines "
        f"(> {MAX_FUNCTION_LINES})",
    ]
    for violation in expected:
        assert violation in found, (violation, found)
    assert len(found) == len(expected), found
    # A private name inside one subpackage is allowed (engine/core.py's second line).
    (package / "device" / "a.py").write_text("")
    assert not any(v.startswith("cycle") for v in layout_violations(package))


def test_native_size_checker_reports_a_long_function(tmp_path):
    source = tmp_path / "x.cc"
    body = "  int x = 1;\n" * MAX_FUNCTION_LINES
    source.write_text(f"void Short() {{\n  return;\n}}\n\nvoid Long(int a) {{\n{body}}}\n")
    assert native_function_violations(source) == [
        f"size: x.cc:5 has {MAX_FUNCTION_LINES + 2} lines (> {MAX_FUNCTION_LINES})"]


def test_import_without_jax():
    """grammars/ and engine/ work where JAX cannot be imported (it is not installed)."""
    script = textwrap.dedent("""
        import sys
        for name in ("jax", "jaxlib", "flax"):
            sys.modules[name] = None  # `import jax` now raises ImportError
        import jaxguide
        from jaxguide import grammars, engine
        info = jaxguide.TokenizerInfo.from_token_bytes(
            [b"a", b"b", b"{", b"}", b'"', b":", b"1", b""], eos_token_ids=[7])
        grammar = jaxguide.Grammar.from_json_schema({"type": "integer"})
        matcher = jaxguide.Matcher(jaxguide.compile_grammar(grammar, info))
        assert matcher.accept_token(6) and matcher.is_accepting()
        assert not [m for m in sys.modules if m.split(".")[0] in ("jax", "flax")
                    and sys.modules[m] is not None]
        print("ok")
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            cwd=ROOT, timeout=300)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr
