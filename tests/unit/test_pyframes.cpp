// test_pyframes.cpp — Python frames: the stable path of a code object's
// file, rule globs over "relpath:qualname[:line]", and that the unit-test
// process (no interpreter) captures nothing. Capture inside real
// interpreters (3.8-3.13, with and without the GIL) is tested by
// tests/programs/python_sites.sh and tests/python/test_callsites.py.
#include "sites/pyframes.h"

#include <catch2/catch.hpp>

using namespace spillway;

TEST_CASE("a code object's file is named relative to a root that moves with the job") {
    const std::string main_dir = "/home/alice/job", cwd = "/home/alice";
    CHECK(pyframes_relative_path("/usr/lib/python3/dist-packages/torch/nn/modules/linear.py", main_dir, cwd) ==
          "torch/nn/modules/linear.py");
    CHECK(pyframes_relative_path("/opt/venv/lib/python3.11/site-packages/numpy/core/numeric.py", main_dir, cwd) ==
          "numpy/core/numeric.py");
    CHECK(pyframes_relative_path("/home/alice/job/train.py", main_dir, cwd) == "train.py");
    CHECK(pyframes_relative_path("/home/alice/job/lib/graph.py", main_dir, cwd) == "lib/graph.py");
    CHECK(pyframes_relative_path("/home/alice/other/tool.py", main_dir, cwd) == "other/tool.py");
    CHECK(pyframes_relative_path("/home/alice/jobs/x.py", main_dir, "") == "/home/alice/jobs/x.py"); // not a prefix match
    CHECK(pyframes_relative_path("/usr/lib/python3.11/json/decoder.py", main_dir, cwd) == "python3.11/json/decoder.py");
    CHECK(pyframes_relative_path("<frozen importlib._bootstrap>", main_dir, cwd) == "<frozen importlib._bootstrap>");
    CHECK(pyframes_relative_path("train.py", "", "") == "train.py");
}

TEST_CASE("a python glob matches file:function with or without the line") {
    const char *frame = "train.py:Model.build_csr:42";
    CHECK(pyframe_matches("train.py:Model.build_csr", frame));
    CHECK(pyframe_matches("train.py:Model.build_csr:42", frame));
    CHECK(pyframe_matches("train.py:*build_csr*", frame));
    CHECK(pyframe_matches("*.py:Model.*", frame));
    CHECK_FALSE(pyframe_matches("train.py:Model.build_csr:43", frame));
    CHECK_FALSE(pyframe_matches("train.py:build_csr", frame));
    CHECK_FALSE(pyframe_matches("eval.py:*", frame));
}

TEST_CASE("a process without an interpreter captures no Python frames") {
    pyframes_init(4);
    CHECK(std::string(pyframes_mode()) == "none");
    PyStack s;
    s.depth = 3;
    pyframes_capture(s);
    CHECK(s.depth == 0);
    PyStack empty;
    CHECK(pyframes_equal(s, empty));
    CHECK(pyframes_mix(7, s) == 7);
    CHECK(pyframes_text(s, 0).empty());
}

TEST_CASE("frames differing in code object or line differ in key") {
    PyStack a, b;
    a.depth = b.depth = 1;
    int code1 = 0, code2 = 0;
    a.frames[0] = {&code1, 10};
    b.frames[0] = {&code1, 11};
    CHECK_FALSE(pyframes_equal(a, b));
    CHECK(pyframes_mix(1, a) != pyframes_mix(1, b));
    b.frames[0] = {&code2, 10};
    CHECK_FALSE(pyframes_equal(a, b));
    b.frames[0] = {&code1, 10};
    CHECK(pyframes_equal(a, b));
    CHECK(pyframes_mix(1, a) == pyframes_mix(1, b));
}
