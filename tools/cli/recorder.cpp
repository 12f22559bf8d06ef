// recorder.cpp — see recorder.h.
#include "recorder.h"

#include "job_sample.h"
#include "json.h"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <ctime>
#include <pthread.h>

namespace spillway::cli {

Recorder::~Recorder() {
    if (thread_.joinable()) {
        {
            std::lock_guard<std::mutex> guard(mutex_);
            stop_ = true;
        }
        wake_.notify_all();
        thread_.join();
    }
    if (file_) fclose(file_);
}

bool Recorder::open(const std::string &path, double interval_s, const std::vector<std::string> &command,
                    std::string &error) {
    file_ = fopen(path.c_str(), "we");
    if (!file_) {
        error = "cannot write the record file " + path + ": " + strerror(errno) + " (choose a writable path)";
        return false;
    }
    interval_s_ = interval_s;
    start_ns_ = monotonic_ns();
    char when[32];
    time_t now = time(nullptr);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    char interval[32];
    snprintf(interval, sizeof interval, "%.3f", interval_s);
    std::string head = std::string("{\"spillway_record\":1,\"interval_s\":") + interval + ",\"command\":[";
    for (size_t i = 0; i < command.size(); i++) {
        if (i) head += ',';
        head += json_quote(command[i]);
    }
    write_line(head + "],\"started\":\"" + when + "\"}");
    return true;
}

void Recorder::write_line(const std::string &line) {
    std::string whole = line + "\n";
    fwrite(whole.data(), 1, whole.size(), file_);
    fflush(file_);
}

void Recorder::start(pid_t root) {
    if (!file_) return;
    // The thread takes no signal: forwarding and waitpid stay on the main thread.
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    thread_ = std::thread([this, root] { loop(root); });
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

void Recorder::loop(pid_t root) {
    JobSampler sampler(root, interval_s_);
    auto period = std::chrono::nanoseconds((uint64_t)(interval_s_ * 1e9));
    auto next = std::chrono::steady_clock::now();
    for (;;) {
        JobSample s = sampler.take();
        write_line(sample_json(s, start_ns_));
        next += period;
        auto now = std::chrono::steady_clock::now();
        while (next <= now) next += period; // a slow sample skips a beat rather than bunching up
        std::unique_lock<std::mutex> lock(mutex_);
        if (wake_.wait_until(lock, next, [this] { return stop_; })) return;
    }
}

void Recorder::finish(const std::vector<std::string> &stats_lines, int status, int signal) {
    if (!file_) return;
    if (thread_.joinable()) {
        {
            std::lock_guard<std::mutex> guard(mutex_);
            stop_ = true;
        }
        wake_.notify_all();
        thread_.join();
    }
    for (const std::string &line : stats_lines) { // only whole objects, so every line of the record parses
        if (parse_object(line)) write_line("{\"stats\":" + line + "}");
    }
    char end[128];
    snprintf(end, sizeof end, "{\"exit\":{\"t\":%.3f,\"status\":%d,\"signal\":%d}}",
             (monotonic_ns() - start_ns_) / 1e9, status, signal);
    write_line(end);
    fclose(file_);
    file_ = nullptr;
}

} // namespace spillway::cli
