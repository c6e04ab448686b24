"""One macro for every native/<stage>/BUILD: the same source rule as CMakeLists.txt.

CMakeLists.txt globs native/<stage>/*.cc for each stage in JAXGUIDE_STAGES: `foo_test.cc` is a
unit test (one executable), every other `.cc` is part of the core. This file holds the Bazel side
of that rule; tests/test_build_sources.py reads the constants below (and CMakeLists.txt) and fails
if the two builds would compile different files, so they cannot drift. New files in a stage
folder are picked up by both builds without editing anything.
"""

# Same order as JAXGUIDE_STAGES in CMakeLists.txt. A stage may use headers and symbols of every
# stage before it (support first), never of a later one.
STAGES = ["support", "json_schema", "tokenizer", "lexer", "parser", "matcher", "batch"]

# The source rule, read by tests/test_build_sources.py: keep these as literal lists.
LIBRARY_SRCS = ["*.cc"]
TEST_SRCS = ["*_test.cc"]
HDRS = ["*.h"]

# CMakeLists.txt's JAXGUIDE_WARNINGS (warnings only: no -Werror, as in CMake).
WARNINGS = [
    "-Wall",
    "-Wextra",
    "-Wpedantic",
    "-Wshadow",
    "-Wnon-virtual-dtor",
    "-Wconversion",
    "-Wno-sign-conversion",
]

def stage_label(stage):
    return "//native/%s:%s" % (stage, stage)

def all_stage_labels():
    """Every stage library, e.g. for the Python extension."""
    return [stage_label(s) for s in STAGES]

def native_stage(test_size = "small", test_sizes = {}):
    """Declares the stage library of this package and one cc_test per *_test.cc file.

    The stage is the package's folder name (native/<stage>), its library target has the same name
    (//native/lexer:lexer). A folder with no .cc yet gives a header-only (or empty) library.

    Args:
      test_size: Bazel test size of every test in the stage.
      test_sizes: per-test overrides, {"lexer_dfa_test": "medium"}.
    """
    package = native.package_name()
    stage = package.split("/")[-1]
    if package != "native/" + stage or stage not in STAGES:
        fail("native_stage() belongs in native/<stage>/BUILD for a stage in %s, not in %s" %
             (STAGES, package))
    earlier = STAGES[:STAGES.index(stage)]

    native.cc_library(
        name = stage,
        srcs = native.glob(LIBRARY_SRCS, exclude = TEST_SRCS),
        hdrs = native.glob(HDRS),
        copts = WARNINGS,
        # CMake links Threads::Threads into the core; every stage may start threads.
        linkopts = ["-pthread"],
        # A static library, like CMake's jaxguide_core: no lib<stage>.so is built.
        linkstatic = 1,
        deps = [stage_label(s) for s in earlier],
        visibility = ["//visibility:public"],
    )

    for src in native.glob(TEST_SRCS):
        name = src[:-len(".cc")]
        native.cc_test(
            name = name,
            srcs = [src],
            copts = WARNINGS,
            size = test_sizes.get(name, test_size),
            linkstatic = 1,
            # A test sees its own stage and the earlier ones (support/testing.h included), so a
            # stage's tests build even while a later stage is mid-edit.
            deps = [":" + stage] + [stage_label(s) for s in earlier],
        )
