"""CMake and Bazel build the same native sources: one file-system rule, two build files.

CMakeLists.txt globs native/<stage>/*.cc for each stage of JAXGUIDE_STAGES (`*_test.cc` is a unit
test, everything else is the core); the Bazel BUILD files do the same through
tools/bazel/native_stage.bzl. This test reads both (no Bazel or CMake needed), applies each rule to
the files actually on disk and checks they agree: same stages in the same order, and every
native/**/*.cc compiled exactly once, into the same kind of target, by both builds.
"""

from __future__ import annotations

import ast
import fnmatch
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NATIVE = ROOT / "native"
CMAKE = ROOT / "CMakeLists.txt"
STAGE_BZL = ROOT / "tools" / "bazel" / "native_stage.bzl"
MODULE_DIR = "python"  # native/python: the pybind11 module, not a stage
BUILD_NAMES = ("BUILD", "BUILD.bazel")


# ------------------------------------------------------------------------------------ CMake side

def _cmake_text() -> str:
    # Drop comments so the header's prose cannot match the patterns below.
    return "\n".join(line.split("#", 1)[0] for line in CMAKE.read_text().splitlines())


def cmake_stages() -> list[str]:
    match = re.search(r"set\(JAXGUIDE_STAGES\s+([^)]*)\)", _cmake_text())
    assert match, "CMakeLists.txt no longer sets JAXGUIDE_STAGES"
    return match.group(1).split()


def cmake_rule() -> tuple[str, re.Pattern[str], list[str]]:
    """(source glob within a stage folder, regex that marks a test, module sources)."""
    text = _cmake_text()
    glob = re.findall(
        r'file\(GLOB\s+\w+\s+(?:CONFIGURE_DEPENDS\s+)?'
        r'"\$\{CMAKE_CURRENT_SOURCE_DIR\}/native/\$\{stage\}/([^"/]+)"\s*\)', text)
    assert len(glob) == 1, f"expected one per-stage file(GLOB ...) in CMakeLists.txt, got {glob}"
    test = re.findall(r'if\(\s*src\s+MATCHES\s+"([^"]+)"\s*\)', text)
    assert len(test) == 1, f"expected one `if(src MATCHES ...)` test rule, got {test}"
    module = re.search(r"pybind11_add_module\(\s*_native\s+MODULE\s+([^)]*)\)", text)
    assert module, "CMakeLists.txt no longer builds _native with pybind11_add_module"
    # A CMake quoted argument writes a regex backslash as "\\".
    return glob[0], re.compile(test[0].replace("\\\\", "\\")), module.group(1).split()


def cmake_owners(path: Path) -> list[tuple[str, str]]:
    """The CMake targets that compile `path` (a .cc under native/)."""
    glob, test_regex, module_sources = cmake_rule()
    rel = path.relative_to(ROOT).as_posix()
    owners = []
    if rel in module_sources:
        owners.append(("module", "_native"))
    parts = path.relative_to(NATIVE).parts
    if len(parts) == 2 and parts[0] in cmake_stages() and fnmatch.fnmatchcase(parts[1], glob):
        if test_regex.search(path.as_posix()):
            owners.append(("test", path.stem))  # add_executable(<NAME_WE>)
        else:
            owners.append(("core", parts[0]))
    return owners


# ------------------------------------------------------------------------------------ Bazel side

def _bzl_module() -> ast.Module:
    # Starlark's syntax here is a subset of Python's.
    return ast.parse(STAGE_BZL.read_text(), str(STAGE_BZL))


def bzl_constants() -> dict[str, object]:
    constants = {}
    for node in _bzl_module().body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name) and target.id.isupper():
                try:
                    constants[target.id] = ast.literal_eval(node.value)
                except ValueError:
                    pass
    return constants


def bzl_glob_calls() -> list[str]:
    """native.glob(...) calls of the macro, as source text."""
    calls = []
    for node in ast.walk(_bzl_module()):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "glob"):
            calls.append(re.sub(r"\s+", "", ast.unparse(node)))
    return calls


def bazel_stages() -> list[str]:
    return list(bzl_constants()["STAGES"])


def bazel_packages_under_native() -> set[str]:
    return {p.parent.relative_to(NATIVE).as_posix()
            for name in BUILD_NAMES for p in NATIVE.rglob(name)}


def _build_file(folder: Path) -> Path | None:
    for name in BUILD_NAMES:
        if (folder / name).is_file():
            return folder / name
    return None


def _calls(build: Path) -> list[ast.Call]:
    return [n for n in ast.walk(ast.parse(build.read_text(), str(build)))
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)]


def _matches(name: str, include: list[str], exclude: list[str] = ()) -> bool:
    # Bazel's `*` does not cross "/", and these globs are all for files directly in the package.
    return (any(fnmatch.fnmatchcase(name, p) for p in include)
            and not any(fnmatch.fnmatchcase(name, p) for p in exclude))


def bazel_module_sources() -> list[str]:
    build = _build_file(NATIVE / MODULE_DIR)
    assert build, "native/python has no BUILD file (the _native.so cc_binary)"
    for call in _calls(build):
        if call.func.id == "cc_binary":
            kwargs = {k.arg: k.value for k in call.keywords}
            if ast.literal_eval(kwargs["name"]) == "_native.so":
                return [f"native/{MODULE_DIR}/{s}" for s in ast.literal_eval(kwargs["srcs"])]
    raise AssertionError("native/python/BUILD has no cc_binary named _native.so")


def bazel_owners(path: Path) -> list[tuple[str, str]]:
    """The Bazel targets that compile `path`, following native_stage()'s globs."""
    constants = bzl_constants()
    parts = path.relative_to(NATIVE).parts
    owners = []
    if path.relative_to(ROOT).as_posix() in bazel_module_sources():
        owners.append(("module", "_native"))
    if len(parts) == 2 and parts[0] in constants["STAGES"]:
        stage, name = parts
        if _matches(name, constants["LIBRARY_SRCS"], constants["TEST_SRCS"]):
            owners.append(("core", stage))
        if _matches(name, constants["TEST_SRCS"]):
            owners.append(("test", name[:-len(".cc")]))
    return owners


# ------------------------------------------------------------------------------------ the checks

def native_sources() -> list[Path]:
    return sorted(NATIVE.rglob("*.cc"))


def test_stage_lists_match():
    assert bazel_stages() == cmake_stages()


def test_every_native_folder_is_a_stage_or_the_module():
    folders = sorted(p.name for p in NATIVE.iterdir() if p.is_dir())
    assert sorted(cmake_stages() + [MODULE_DIR]) == folders


def test_each_stage_has_a_build_file_calling_native_stage():
    for stage in bazel_stages():
        build = _build_file(NATIVE / stage)
        assert build, f"native/{stage} has no BUILD file"
        assert [c.func.id for c in _calls(build) if c.func.id == "native_stage"], (
            f"{build.relative_to(ROOT)} does not call native_stage()")
    # A BUILD file in a sub-folder would cut its files out of the stage's glob.
    assert bazel_packages_under_native() == set(bazel_stages()) | {MODULE_DIR}


def test_bazel_macro_globs_are_the_constants_read_here():
    calls = bzl_glob_calls()
    assert "native.glob(LIBRARY_SRCS,exclude=TEST_SRCS)" in calls
    assert "native.glob(TEST_SRCS)" in calls
    assert "native.glob(HDRS)" in calls
    assert len(calls) == 3, calls


def test_module_sources_match():
    assert bazel_module_sources() == cmake_rule()[2]


@pytest.mark.parametrize("source", native_sources(), ids=lambda p: p.relative_to(NATIVE).as_posix())
def test_source_is_built_once_and_the_same_way(source):
    cmake = cmake_owners(source)
    bazel = bazel_owners(source)
    assert len(cmake) == 1, f"CMake compiles {source} in {len(cmake)} targets: {cmake}"
    assert len(bazel) == 1, f"Bazel compiles {source} in {len(bazel)} targets: {bazel}"
    assert cmake == bazel


def test_headers_are_in_a_stage_library():
    constants = bzl_constants()
    for header in sorted(NATIVE.rglob("*.h")):
        parts = header.relative_to(NATIVE).parts
        assert len(parts) == 2 and parts[0] in constants["STAGES"], (
            f"{header.relative_to(ROOT)} is in no stage library's hdrs")
        assert _matches(parts[1], constants["HDRS"])


def test_test_names_are_unique():
    # CMake names each test executable after its file (NAME_WE), across all stages.
    names = [p.stem for p in native_sources() if cmake_owners(p)[:1] and
             cmake_owners(p)[0][0] == "test"]
    assert len(names) == len(set(names)), sorted(names)
