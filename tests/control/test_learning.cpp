// test_learning.cpp — learning without memory pressure (issue 26;
// shim/engine/access/sampler.cpp, page_probes.h, probe_rules.h): with no
// memory limit and tiering off, a run of tiering_job (see its opening
// comment) learns its scatter site as random and its fill-in-order site as
// sequential, and the next run, under a limit, places the scatter site in
// memory at allocation.
//  - learn-quick: a scatter that ends before the sampler's first look
//    (python_sites' shape): only the first look's islands can tell.
//  - learn-pair: the pair, where every page of both regions is
//    present before the scatter starts: presence never changes again,
//    only the probes can tell.
#include "memcg.h"
#include "support.h"

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <unistd.h>

using namespace control_test;

namespace {

std::string slurp(const std::string &path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// The access the profile holds for the site whose frames name `function`
// ("" when no site names it).
std::string learned(const std::string &profile, const std::string &function) {
    std::string text = slurp(profile);
    size_t at = 0;
    while ((at = text.find("[[site]]", at)) != std::string::npos) {
        size_t end = text.find("[[site]]", at + 1);
        std::string site = text.substr(at, end == std::string::npos ? std::string::npos : end - at);
        at = end == std::string::npos ? text.size() : end;
        if (site.find(function) == std::string::npos) continue;
        size_t a = site.find("access = \"");
        if (a == std::string::npos) return "?";
        a += 10;
        return site.substr(a, site.find('"', a) - a);
    }
    return "";
}

struct Learning {
    std::string config, profile;
    explicit Learning(const std::string &name) {
        profile = spill_dir() + "/../" + name + "-profile.toml";
        config = spill_dir() + "/../" + name + ".toml";
        unlink(profile.c_str());
        std::ofstream(config) << "[tiering]\nenabled = false\n[profile]\nfile = \"" << profile << "\"\n";
    }
    ~Learning() {
        unlink(profile.c_str());
        unlink(config.c_str());
    }
    std::string run(const std::vector<std::string> &args, int *status, const MemoryCgroup *cg = nullptr) {
        SpawnOptions o;
        o.program = job_path();
        o.set_env = {"SPILLWAY_CONFIG=" + config, "SPILLWAY_LOG=info"};
        if (cg) {
            std::string procs = cg->procs_file();
            o.before_exec = [procs] {
                if (!join_cgroup(procs.c_str())) _exit(3);
            };
        }
        return run_helper(args, status, o);
    }
};

// The second run, in a cgroup of limit_mib: the scatter site from its
// first byte in memory, the dataset on disk.
void placed_from_profile(Learning &l, const std::vector<std::string> &args, uint64_t limit_mib,
                         const char *table_key) {
    std::string why;
    auto cg = MemoryCgroup::create(&why);
    INFO(why);
    REQUIRE(cg);
    REQUIRE(cg->set_limit(limit_mib * MiB));
    int status = -1;
    std::string out = l.run(args, &status, cg.get());
    INFO("under a limit of " << limit_mib << " MiB, exit status " << status << "\n" << out);
    REQUIRE(status == 0);
    auto k = keys(out);
    CHECK(k["dataset_backing"] == "1");
    CHECK(k[table_key] == "2");
    CHECK(k["intact"] == "1");
}

} // namespace

TEST_CASE("no limit: a scatter done before the first look is learned random, the fill in order sequential") {
    Learning l("learn-quick");
    // 20000 writes into 128 MiB, as python_sites.py makes: ~5 ms.
    std::vector<std::string> args = {"learn-quick", "256", "128", "20000"};
    int status = -1;
    std::string out = l.run(args, &status);
    INFO("no limit, exit status " << status << "\n" << out);
    REQUIRE(status == 0);
    auto k = keys(out);
    CHECK(k["dataset_backing"] == "1");
    CHECK(k["table_backing"] == "1"); // nothing learned yet: disk
    CHECK(k["intact"] == "1");
    INFO(slurp(l.profile));
    CHECK(learned(l.profile, "alloc_quick_table") == "random");
    // The fill in order is never taken for random. Whether it is learned
    // sequential depends on the sampler seeing it under way: a 256 MiB fill
    // done before the first look (87 ms on a warm spill disk here, with
    // 2 MiB page-cache folios) leaves one run over the whole region, which
    // says nothing of the order ("access unknown": no entry, or an entry
    // for its lifetime alone, the dataset being freed within a second, as
    // on a VM whose disk took the fill in 40 ms). Either way its next
    // placement is disk (placed_from_profile checks it).
    std::string dataset = learned(l.profile, "alloc_quick_dataset");
    CHECK((dataset == "sequential" || dataset == "" || dataset == "unknown"));
    placed_from_profile(l, args, 1024, "table_backing");
}

TEST_CASE("no limit: the issue's pair, every page present before the scatter, is learned by the probes") {
    Learning l("learn-pair");
    // The sizes: 512 MiB in order, 20M writes into 512 MiB.
    std::vector<std::string> args = {"learn-pair", "512", "512", "20"};
    int status = -1;
    std::string out = l.run(args, &status);
    INFO("no limit, exit status " << status << "\n" << out);
    REQUIRE(status == 0);
    auto k = keys(out);
    CHECK(k["dataset_backing"] == "1");
    CHECK(k["table_backing"] == "1");
    CHECK(k["intact"] == "1");
    INFO(slurp(l.profile));
    CHECK(learned(l.profile, "alloc_pair_table") == "random");
    CHECK(learned(l.profile, "alloc_pair_dataset") == "sequential");
    placed_from_profile(l, args, 1536, "table_backing");
}

TEST_CASE("no limit, tiering on: the table the probes judge random is promoted in the same run") {
    // The region's own phase follows the probes' verdict (sampler.cpp), so
    // tiering, which without a limit promotes every disk region in a
    // random phase, moves it: xz -9's hash table, mapped whole by its
    // initialisation, stayed on disk before.
    std::string profile = spill_dir() + "/../learning-promoted-profile.toml";
    std::string config = spill_dir() + "/../learning-promoted.toml";
    unlink(profile.c_str());
    std::ofstream(config) << "[profile]\nfile = \"" << profile << "\"\n";
    SpawnOptions o;
    o.program = job_path();
    o.set_env = {"SPILLWAY_CONFIG=" + config, "SPILLWAY_LOG=info"};
    int status = -1;
    std::string out = run_helper({"learn-pair", "256", "256", "20", "promoted"}, &status, o);
    INFO("no limit, exit status " << status << "\n" << out << "profile:\n" << slurp(profile));
    REQUIRE(status == 0);
    auto k = keys(out);
    CHECK(k["table_backing"] == "1");     // nothing learned yet: disk
    CHECK(k["table_backing_end"] == "2"); // promoted once judged random
    CHECK(k["dataset_backing"] == "1");
    CHECK(k["intact"] == "1");
    CHECK(learned(profile, "alloc_pair_table") == "random");
    unlink(profile.c_str());
    unlink(config.c_str());
}

TEST_CASE("no limit: a profile's wrong \"sequential\" for the scatter site is corrected by a run that sees the scatter") {
    Learning l("learn-relearn");
    std::vector<std::string> args = {"learn-pair", "512", "512", "20"};
    int status = -1;
    std::string out = l.run(args, &status);
    REQUIRE(status == 0);
    REQUIRE(learned(l.profile, "alloc_pair_table") == "random");
    // What an earlier run that saw only the table's fill in order would
    // have saved: the site's entry says sequential.
    std::string text = slurp(l.profile);
    size_t site = text.find("alloc_pair_table");
    REQUIRE(site != std::string::npos);
    size_t access = text.rfind("access = \"random\"", site);
    REQUIRE(access != std::string::npos);
    text.replace(access, strlen("access = \"random\""), "access = \"sequential\"");
    std::ofstream(l.profile, std::ios::trunc) << text;
    REQUIRE(learned(l.profile, "alloc_pair_table") == "sequential");
    out = l.run(args, &status);
    INFO("second run, no limit, exit status " << status << "\n" << out);
    REQUIRE(status == 0);
    auto k = keys(out);
    CHECK(k["table_backing"] == "1"); // placed on disk, as the profile said
    CHECK(k["intact"] == "1");
    INFO(slurp(l.profile));
    CHECK(learned(l.profile, "alloc_pair_table") == "random");
    CHECK(learned(l.profile, "alloc_pair_dataset") == "sequential");
}

TEST_CASE("a site whose buffers all die within a second is saved short-lived, and the next run gives it anonymous memory") {
    // Tiering on (the learning runs above turn it off): a short-lived
    // site's region goes to anonymous memory only where tiering could
    // demote it, were it to live on (policy.h, short_lived_fits).
    std::string profile = spill_dir() + "/../learning-temporaries-profile.toml";
    std::string config = spill_dir() + "/../learning-temporaries.toml";
    unlink(profile.c_str());
    std::ofstream(config) << "[tiering]\nmin_size = \"16MiB\"\n[profile]\nfile = \"" << profile << "\"\n";
    auto run = [&](const char *label) {
        SpawnOptions o;
        o.program = job_path();
        o.set_env = {"SPILLWAY_CONFIG=" + config, "SPILLWAY_LOG=info"};
        int status = -1;
        std::string out = run_helper({"temporaries", "4", "32"}, &status, o);
        INFO(label << ": exit status " << status << "\n" << out << "profile:\n" << slurp(profile));
        REQUIRE(status == 0);
        auto k = keys(out);
        CHECK(k["intact"] == "1");
        return k;
    };
    auto first = run("first run");
    CHECK(first["temporary_backings"] == "1,1,1,1"); // nothing known yet: disk
    CHECK(first["kept_backing"] == "1");
    std::string text = slurp(profile);
    // The temporaries' site: short-lived, with what was seen.
    size_t at = text.find("alloc_temporary");
    REQUIRE(at != std::string::npos);
    size_t start = text.rfind("[[site]]", at);
    std::string site = text.substr(start, text.find("[[site]]", at) - start);
    INFO(site);
    CHECK(site.find("lifetime = \"short\"") != std::string::npos);
    CHECK(site.find("decision = 'anon'") != std::string::npos); // tomlplusplus writes literal strings
    CHECK(site.find("4 of 4 freed") != std::string::npos);
    // The kept buffer lived past a second: never saved as short-lived.
    size_t kept = text.find("alloc_kept");
    if (kept != std::string::npos) {
        size_t ks = text.rfind("[[site]]", kept);
        CHECK(text.substr(ks, text.find("[[site]]", kept) - ks).find("lifetime = \"long\"") != std::string::npos);
    }
    auto second = run("second run");
    CHECK(second["temporary_backings"] == "3,3,3,3"); // anonymous memory from the first
    CHECK(second["kept_backing"] == "1");
    CHECK(slurp(profile).find("runs = 2") != std::string::npos);
    unlink(profile.c_str());
    unlink(config.c_str());
}
