// sample_fixture.h — a JobSample of one process holding the given regions,
// derived as JobSampler::take leaves it: the input the `top` frame and the
// region figures' tests start from (test_top.cpp, test_region_pages.cpp).
#pragma once

#include "job_sample.h"

#include <string>
#include <sys/types.h>
#include <vector>

namespace spillway::test {

inline spillway::cli::JobSample derived_sample(pid_t pid, const std::string &comm,
                                          std::vector<spillway::cli::RegionSample> regions) {
    spillway::cli::JobSample js;
    js.mono_ns = 1;
    spillway::cli::ProcessSample p;
    p.pid = pid;
    p.comm = comm;
    p.has_snapshot = true;
    p.regions = std::move(regions);
    js.processes.push_back(p);
    derive(js, spillway::cli::JobSample{});
    return js;
}

} // namespace spillway::test
