// test_tmp.h — where unit tests make spill directories and files that must
// be on a disk filesystem: SPILLWAY_TEST_TMP (tests/meson.build sets it for
// every test; tools/spill-device.sh chooses a loop-mounted ext4), else /var/tmp.
#pragma once

#include <cstdlib>
#include <string>

namespace test {

inline std::string tmp_base() {
    const char *t = getenv("SPILLWAY_TEST_TMP");
    return t && *t ? t : "/var/tmp";
}

// A mkdtemp/mkstemp template there: BASE/name.XXXXXX.
inline std::string tmp_template(const char *name) { return tmp_base() + "/" + name + ".XXXXXX"; }

} // namespace test
