// test_system_libraries.cpp — system_libraries.cpp: a library the loader
// cannot find is reported as "not found" with the package to install, one
// it finds is not reported, and the lines read as the tool prints them.
#include "system_libraries.h"

#include <catch2/catch.hpp>

using namespace spillway::cli;

TEST_CASE("a library the loader finds is not reported") {
    static const SystemLibrary present[] = {{"libc.so.6", "libc6", true, ""}};
    CHECK(missing_system_libraries(present).empty());
}

TEST_CASE("a missing library is 'not found', with its package") {
    static const SystemLibrary libraries[] = {
        {"libc.so.6", "libc6", true, ""},
        {"libspillway-test-absent.so.9", "libspillway-test-absent9", true, ""},
        {"libspillway-test-gone.so.1", "libgone1", false, "call sites are lost"},
    };
    std::vector<LibraryProblem> problems = missing_system_libraries(libraries);
    REQUIRE(problems.size() == 2);
    CHECK(problems[0].library == &libraries[1]);
    CHECK(problems[0].reason == "not found");
    CHECK(describe(problems[0]) ==
          "libspillway-test-absent.so.9 not found: install Debian's libspillway-test-absent9 "
          "(apt-get install libspillway-test-absent9)");
    CHECK(describe(problems[1]) ==
          "libspillway-test-gone.so.1 not found: call sites are lost: install Debian's libgone1 "
          "(apt-get install libgone1)");
}

TEST_CASE("a file that is not a library is reported with the loader's words") {
    static const SystemLibrary libraries[] = {{"/dev/null", "nothing", true, ""}};
    std::vector<LibraryProblem> problems = missing_system_libraries(libraries);
    REQUIRE(problems.size() == 1);
    CHECK(problems[0].reason.rfind("cannot be loaded (", 0) == 0);
}

TEST_CASE("the shim's own libraries: mimalloc is required, libunwind is not") {
    REQUIRE(std::size(kSystemLibraries) == 2);
    CHECK(std::string(kSystemLibraries[0].soname) == "libmimalloc.so.2");
    CHECK(kSystemLibraries[0].required);
    CHECK(std::string(kSystemLibraries[1].soname) == "libunwind.so.8");
    CHECK_FALSE(kSystemLibraries[1].required);
}
