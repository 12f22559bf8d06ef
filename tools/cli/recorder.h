// recorder.h — `spillway run --record FILE`: samples the job (job_sample.h)
// at a steady rate from a thread of its own while the command runs, one
// JSON line per sample, between a head line and an end line.
//
// File format (JSON lines):
//   {"spillway_record":1,"interval_s":1.000,"command":[...],"started":"<UTC>"}
//   {"t":0.000,"cgroups":[...],"processes":[...]}      one per sample
//   {"stats":{...}}   the shim's exit line of each process (stats.h)
//   {"exit":{"t":12.345,"status":0,"signal":0}}
//
// Invariants: samples are taken at start + k*interval (no drift); the
// thread blocks every signal, so forwarding and waiting stay on the main
// thread; the file is opened before the command starts (a bad path stops
// the run before anything runs) and each line is written whole, so a file
// cut short by a crash still reads up to its last line.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <sys/types.h>
#include <thread>
#include <vector>

namespace spillway::cli {

class Recorder {
  public:
    ~Recorder();
    // Creates (truncates) path and writes the head line; false and a
    // one-line reason when it cannot.
    bool open(const std::string &path, double interval_s, const std::vector<std::string> &command,
              std::string &error);
    // Starts sampling root's process tree.
    void start(pid_t root);
    // Stops sampling, appends the stats lines and the end line, closes.
    void finish(const std::vector<std::string> &stats_lines, int status, int signal);
    bool is_open() const { return file_ != nullptr; }

  private:
    void loop(pid_t root);
    void write_line(const std::string &line);

    FILE *file_ = nullptr;
    double interval_s_ = 1;
    uint64_t start_ns_ = 0;
    std::thread thread_;
    std::mutex mutex_;
    std::condition_variable wake_;
    bool stop_ = false;
};

} // namespace spillway::cli
