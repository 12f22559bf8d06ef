// test_record_summary.cpp — `spillway report`'s arithmetic on a recording:
// cgroup peaks and when, faults and bytes read split among phases by the
// pages each region faulted in, per-process peaks and totals, honest about
// unreadable lines and a recording cut short.
#include "record_summary.h"

#include <catch2/catch.hpp>
#include <string>

using namespace spillway::cli;

namespace {

std::string sample(double t, uint64_t usage, uint64_t majflt, uint64_t read, int random_rate, int seq_rate,
                   uint64_t resident) {
    char buf[2048];
    snprintf(buf, sizeof buf,
             "{\"t\":%.3f,\"cgroups\":[{\"name\":\"/job\",\"version\":2,\"known\":true,\"usage\":%llu,"
             "\"limit\":1073741824,\"anon\":%llu,\"file\":500,\"shmem\":0,\"dirty\":7,\"writeback\":1,"
             "\"majfault_s\":null,\"refault_s\":12.0,\"psi\":{\"scope\":\"cgroup\",\"some10\":%.2f,\"full10\":1.00}}],"
             "\"processes\":[{\"pid\":77,\"comm\":\"python3\",\"rank\":\"1\",\"local_rank\":\"1\",\"cgroup\":\"/job\","
             "\"majflt\":%llu,\"read_bytes\":%llu,\"majflt_s\":null,\"bytes_per_fault\":null,\"snapshot\":true,"
             "\"fallbacks\":0,\"regions\":["
             "{\"start\":4096,\"len\":1000000,\"resident\":%llu,\"backing\":\"disk\",\"phase\":\"random\","
             "\"advice\":\"random\",\"fault_pages_s\":%d},"
             "{\"start\":8192000,\"len\":2000000,\"resident\":10,\"backing\":\"disk\",\"phase\":\"sequential\","
             "\"advice\":\"sequential\",\"fault_pages_s\":%d}],\"unlisted\":0}]}",
             t, (unsigned long long)usage, (unsigned long long)usage / 2, t * 10, (unsigned long long)majflt,
             (unsigned long long)read, (unsigned long long)resident, random_rate, seq_rate);
    return buf;
}

} // namespace

TEST_CASE("report: peaks, phases and processes from a recording") {
    std::vector<std::string> lines = {
        "{\"spillway_record\":1,\"interval_s\":1.000,\"command\":[\"python3\",\"train.py\"],\"started\":\"X\"}",
        sample(0, 100 << 20, 10, 0, 0, 0, 5),
        sample(1, 900 << 20, 410, 4 << 20, 300, 100, 700),    // 400 faults, 4 MiB: 3/4 random
        "not json",
        sample(2, 600 << 20, 510, 5 << 20, 0, 0, 600),        // 100 faults, no region faulting
        "{\"stats\":{\"pid\":77}}",
        "{\"exit\":{\"t\":2.500,\"status\":3,\"signal\":0}}",
    };
    RecordSummary s = summarize_record(lines);
    CHECK(s.command == "python3 train.py");
    CHECK(s.samples == 3);
    CHECK(s.unreadable == 1);
    CHECK(s.stats_lines == 1);
    REQUIRE(s.has_exit);
    CHECK(s.exit_status == 3);
    const CgroupPeaks &c = s.cgroups.at("/job");
    CHECK(c.peak_usage == 900ull << 20);
    CHECK(c.peak_at == Approx(1.0));
    CHECK(c.limit == 1ull << 30);
    CHECK(c.anon == 450ull << 20);
    CHECK(c.psi_some == Approx(20.0));
    CHECK(c.refault_s == Approx(12.0));
    CHECK(s.phases.at("random").major_faults == Approx(300));
    CHECK(s.phases.at("random").bytes_read == Approx(3 << 20));
    CHECK(s.phases.at("sequential").major_faults == Approx(100));
    CHECK(s.phases.at("random").pages_faulted == Approx(300));
    CHECK(s.phases.at("random").region_seconds == Approx(2));
    CHECK(s.phases.at("outside regions").major_faults == Approx(100));
    CHECK(s.phases.at("outside regions").bytes_read == Approx(1 << 20));
    const ProcessPeaks &p = s.processes.at(77);
    CHECK(p.rank == "1");
    CHECK(p.peak_resident == 710);
    CHECK(p.peak_reserved == 3000000);
    CHECK(p.last_majflt - p.first_majflt == 500);

    std::string text;
    for (const std::string &l : render_record_summary(s)) text += l + "\n";
    CHECK(text.find("spillway report: python3 train.py; 3 samples every 1.00 s from X") != std::string::npos);
    CHECK(text.find("ended after 2.5 s with status 3") != std::string::npos);
    CHECK(text.find("cgroup /job (v2): peak 900MiB of 1.00GiB (88%) at 1.0 s") != std::string::npos);
    CHECK(text.find("  random                    300     3.00MiB") != std::string::npos);
    CHECK(text.find("  77      1     python3") != std::string::npos);
    CHECK(text.find("1 line(s) could not be read") != std::string::npos);
}

TEST_CASE("report: a recording without its end line says it was cut short") {
    RecordSummary s = summarize_record({sample(0, 1, 0, 0, 0, 0, 0), sample(4, 2, 0, 0, 0, 0, 0)});
    CHECK_FALSE(s.has_exit);
    std::string text;
    for (const std::string &l : render_record_summary(s)) text += l + "\n";
    CHECK(text.find("no end line: the recording was cut short after 4.0 s") != std::string::npos);
}

TEST_CASE("report: a peak holding an estimated region is marked ~, with a note saying why") {
    // sample() with its first region's figure marked as run --record writes a prorated one.
    auto estimated = [](std::string line) {
        std::string at = "\"resident\":";
        size_t first = line.find(at);
        return line.insert(first, "\"estimated\":true,");
    };
    std::vector<std::string> lines = {
        "{\"spillway_record\":1,\"interval_s\":1.000,\"command\":[\"job\"],\"started\":\"X\"}",
        sample(0, 100 << 20, 10, 0, 0, 0, 5),
        estimated(sample(1, 900 << 20, 10, 0, 0, 0, 3000000)), // the peak: an estimate
        sample(2, 600 << 20, 10, 0, 0, 0, 600),
    };
    RecordSummary s = summarize_record(lines);
    const ProcessPeaks &p = s.processes.at(77);
    CHECK(p.peak_resident == 3000010);
    CHECK(p.peak_resident_estimated);
    CHECK(p.estimated_samples == 1);
    std::string text;
    for (const std::string &l : render_record_summary(s)) text += l + "\n";
    INFO(text);
    CHECK(text.find(" ~2.86MiB ") != std::string::npos);
    CHECK(text.find("~ estimated: in 1 process sample(s)") != std::string::npos);

    // An exact peak stays unmarked, though an earlier sample was estimated.
    lines[1] = estimated(lines[1]);
    lines[2] = sample(1, 900 << 20, 10, 0, 0, 0, 3000000);
    s = summarize_record(lines);
    CHECK_FALSE(s.processes.at(77).peak_resident_estimated);
    text.clear();
    for (const std::string &l : render_record_summary(s)) text += l + "\n";
    CHECK(text.find("~2.86MiB") == std::string::npos);
    CHECK(text.find("~ estimated: in 1 process sample(s)") != std::string::npos);

    // No estimate: no mark, no note.
    lines[1] = sample(0, 100 << 20, 10, 0, 0, 0, 5);
    text.clear();
    for (const std::string &l : render_record_summary(summarize_record(lines))) text += l + "\n";
    CHECK(text.find('~') == std::string::npos);
}
