// callsite.cpp — see callsite.h.
//
// Warm path: unw_backtrace (libunwind's cached frame walk), a hash of the
// raw addresses, and a lock-free probe of a fixed bucket array. Cold path
// (a site seen for the first time): module/offset identity via dladdr1,
// symbol names only if a rule needs them, the profile's verdict, then a
// locked insert.
#include "sites/callsite.h"
#include "json_quote.h"

#include "log.h"
#include "profile.h"
#include "size_parse.h"
#include "sites/symbols.h"
#include "sites/unwind_lazy.h"

#include <cstring>
#include <dlfcn.h>
#include <link.h>
#include <mimalloc.h>
#include <mutex>
#include <new>
#include <pthread.h>
#include <ctime>
#include <unistd.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

namespace spillway {

namespace {
constexpr size_t kBuckets = 4096;
const Settings *g_settings = nullptr;
unsigned g_depth = 12;
bool g_need_names = false;
std::atomic<CallSite *> g_buckets[kBuckets];
std::atomic<CallSite *> g_all{nullptr};
std::mutex g_insert_lock;
// Held shared by every capture, exclusively by a fork's prepare handler
// (fork_safety.h): no capture is inside libunwind when the child is made.
pthread_rwlock_t g_capture_gate = PTHREAD_RWLOCK_INITIALIZER;
thread_local bool t_gate_held __attribute__((tls_model("initial-exec"))) = false; // by this forking thread
bool g_captures_off = false;  // a fork child made while a capture may have been in flight
// Our own code, whose frames are skipped: the engine's (this object) and
// the front's (libspillway.so: the entry points, engine_api.h).
struct CodeRange {
    uintptr_t lo = 0, hi = 0;
    bool has(uintptr_t a) const { return a >= lo && a < hi; }
};
CodeRange g_self, g_front;
std::string *g_exe_name = nullptr;

thread_local bool t_capturing __attribute__((tls_model("initial-exec"))) = false;
// libunwind keeps its trace cache in dynamic TLS (it is dlopened), which the
// loader allocates with malloc at a thread's first unw_backtrace and, if that
// malloc fails, kills the process ("cannot allocate memory for thread-local
// data"). Measured: glibc's tst-malloc-thread-fail (threads allocating under
// a 200 MB RLIMIT_AS) died so in 2 of 3 runs at a 64 KiB threshold. So a
// thread's first capture first checks that a small malloc succeeds here.
thread_local bool t_unwinder_tls_ready __attribute__((tls_model("initial-exec"))) = false;

// Whether the loader can give this thread libunwind's TLS block (16 bytes,
// one malloc). A block of that size just freed by this thread is the one its
// next malloc of that size gets back (mimalloc's thread-local free list).
bool unwinder_tls_can_be_allocated() {
    if (t_unwinder_tls_ready) return true;
    void *probe[2] = {mi_malloc(16), mi_malloc(64)}; // the block, and a dtv resize's small realloc
    bool ok = probe[0] && probe[1];
    mi_free(probe[0]);
    mi_free(probe[1]);
    return ok;
}

uint64_t mix(uint64_t h, uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdull;
}

int find_own_code(struct dl_phdr_info *info, size_t, void *) {
    uintptr_t self = (uintptr_t)&find_own_code, front = (uintptr_t)&log_msg; // log.cpp is the front's
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) &ph = info->dlpi_phdr[i];
        if (ph.p_type != PT_LOAD) continue;
        CodeRange r{info->dlpi_addr + ph.p_vaddr, info->dlpi_addr + ph.p_vaddr + ph.p_memsz};
        if (r.has(self)) g_self = r;
        if (r.has(front)) g_front = r;
    }
    return 0;
}

const char *base_name(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

// Module base name and offset of one return address (dladdr1 on ip-1, so a
// call at the very end of a function is attributed to it).
bool module_of(uintptr_t ip, const char **module, uintptr_t *offset) {
    Dl_info info;
    struct link_map *map = nullptr;
    if (!dladdr1((void *)(ip - 1), &info, (void **)&map, RTLD_DL_LINKMAP) || !map) return false;
    *module = (map->l_name && map->l_name[0]) ? base_name(map->l_name) : g_exe_name->c_str();
    *offset = ip - map->l_addr;
    return true;
}

// Function names of the site's frames, in order: exact, "name?" where the
// name is only the nearest symbol below the address, "" when unknown
// (symbols.h).
std::vector<std::string> symbolize_current(const CallSite *site) {
    std::vector<std::string> names(site->depth);
    for (unsigned i = 0; i < site->depth; i++) {
        Dl_info info;
        struct link_map *map = nullptr;
        if (!dladdr1((void *)(site->frames[i] - 1), &info, (void **)&map, RTLD_DL_LINKMAP) || !map) continue;
        const char *path = (map->l_name && map->l_name[0]) ? map->l_name : "/proc/self/exe";
        names[i] = symbol_text(symbol_for(path, map->l_addr, site->frames[i]));
    }
    return names;
}

const char *name_of(const CallSite *site, unsigned frame) {
    if (!site->names) return "";
    const char *n = site->names;
    for (unsigned i = 0; i < frame; i++) n += strlen(n) + 1;
    return n;
}

char *pack_names(const std::vector<std::string> &names) {
    size_t total = 0;
    for (const std::string &n : names) total += n.size() + 1;
    char *buf = (char *)mi_malloc(total ? total : 1);
    if (!buf) return nullptr;
    char *at = buf;
    for (const std::string &n : names) {
        memcpy(at, n.c_str(), n.size() + 1);
        at += n.size() + 1;
    }
    return buf;
}

void store_names(CallSite *site, const std::vector<std::string> &names) { site->names = pack_names(names); }

// The Python frame texts of a site, in order ("relpath:qualname:line").
const char *py_name_of(const CallSite *site, unsigned frame) {
    if (!site->py_names) return "";
    const char *n = site->py_names;
    for (unsigned i = 0; i < frame; i++) n += strlen(n) + 1;
    return n;
}

// A rule's python glob must match one of the Python frames, and its native
// keys (if any) one of the native frames.
bool python_part_matches(const Rule &rule, const CallSite *site) {
    if (rule.python.empty()) return true;
    for (unsigned i = 0; i < site->py.depth; i++)
        if (pyframe_matches(rule.python, py_name_of(site, i))) return true;
    return false;
}

const Rule *match_rule(const CallSite *site) {
    if (g_settings->rules.empty()) return nullptr;
    for (const Rule &rule : g_settings->rules) {
        if (!python_part_matches(rule, site)) continue;
        if (rule.match.empty() && rule.module.empty()) return &rule;
        for (unsigned i = 0; i < site->depth; i++) {
            const char *module = "";
            uintptr_t offset = 0;
            module_of(site->frames[i], &module, &offset);
            bool module_ok = rule.module.empty() || glob_match(rule.module, module);
            const char *name = name_of(site, i);
            bool name_ok = rule.match.empty() || (*name && glob_match(rule.match, name));
            if (module_ok && name_ok) return &rule;
        }
    }
    return nullptr;
}

CallSite *create_site(uint64_t key, const uintptr_t *frames, unsigned depth, const PyStack &py) {
    void *mem = mi_zalloc(sizeof(CallSite));
    if (!mem) return nullptr;
    CallSite *site = new (mem) CallSite();
    site->key = key;
    site->depth = depth;
    uint64_t identity = 0xcbf29ce484222325ull;
    site->py = py;
    if (py.depth) {
        std::vector<std::string> texts;
        for (unsigned i = 0; i < py.depth; i++) {
            texts.push_back(pyframes_text(py, i));
            // Line apart from "relpath:qualname", like offset apart from module.
            const std::string &t = texts.back();
            size_t colon = t.rfind(':');
            identity = identity_hash_step(identity, t.substr(0, colon).c_str(), (uintptr_t)py.frames[i].line);
        }
        site->py_names = pack_names(texts);
    }
    for (unsigned i = 0; i < depth; i++) {
        site->frames[i] = frames[i];
        const char *module = "?";
        uintptr_t offset = frames[i];
        module_of(frames[i], &module, &offset);
        identity = identity_hash_step(identity, module, offset);
    }
    site->identity = identity;
    // Names cost ~0.4 ms per new site (libunwind reads the object's symbol
    // table per frame): only when a rule matches on them or a report will
    // show them.
    if (g_need_names) store_names(site, symbolize_current(site));
    site->rule = match_rule(site);
    site->short_lived_in_profile = profile_short_lived(identity);
    Access learned = profile_lookup(identity);
    if (learned != Access::unknown) {
        site->access.store((int)learned);
        site->from_profile.store(true);
        snprintf(site->evidence, sizeof site->evidence, "from profile %s",
                 g_settings->profile_file.c_str());
    }
    return site;
}
} // namespace

uint64_t identity_hash_step(uint64_t h, const char *module, uintptr_t offset) {
    for (const char *c = module; *c; c++) h = (h ^ (unsigned char)*c) * 0x100000001b3ull;
    return mix(h, offset);
}

void callsite_init(const Settings &s) {
    g_settings = &s;
    g_depth = s.callsite_depth;
    g_need_names = !s.stats_file.empty() || !s.profile_file.empty() || s.log_level >= LogLevel::info;
    for (const Rule &r : s.rules)
        if (!r.match.empty()) g_need_names = true;
    dl_iterate_phdr(find_own_code, nullptr);
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = 0;
    g_exe_name = new std::string(n > 0 ? base_name(exe) : "main");
    pyframes_init(s.python_depth);
    if (strcmp(pyframes_mode(), "none") != 0) SPW_LOG(info, "python frames: %s", pyframes_mode());
    // libunwind itself is initialised on the first capture: it opens a pipe,
    // which a process that never allocates large must not be left holding.
}

CallSite *callsite_capture() {
    if (t_capturing || !g_settings || g_captures_off) return nullptr;
    t_capturing = true;
    if (!unwind_ready() || // loaded here, at the first capture (unwind_lazy.h), outside the gate
        !unwinder_tls_can_be_allocated()) { // out of memory: no site rather than a dead process
        t_capturing = false;
        return nullptr;
    }
    // Set before the gate is taken, as a signal handler on this thread sees it.
    std::atomic_signal_fence(std::memory_order_seq_cst);
    pthread_rwlock_rdlock(&g_capture_gate);
    void *raw[kMaxFrames + 16];
    int n = unw_backtrace(raw, (int)(g_depth + 16));
    t_unwinder_tls_ready = true;
    int first = 0;
    while (first < n && (g_self.has((uintptr_t)raw[first]) || g_front.has((uintptr_t)raw[first])))
        first++;
    unsigned depth = (unsigned)(n - first);
    if (depth > g_depth) depth = g_depth;
    uintptr_t frames[kMaxFrames];
    uint64_t key = depth;
    for (unsigned i = 0; i < depth; i++) {
        frames[i] = (uintptr_t)raw[first + i];
        key = mix(key, frames[i]);
    }
    PyStack py;
    pyframes_capture(py);
    key = pyframes_mix(key, py);
    std::atomic<CallSite *> &bucket = g_buckets[key % kBuckets];
    CallSite *site = bucket.load(std::memory_order_acquire);
    for (; site; site = site->next)
        if (site->key == key && site->depth == depth &&
            memcmp(site->frames, frames, depth * sizeof(uintptr_t)) == 0 && pyframes_equal(site->py, py))
            break;
    if (!site) {
        CallSite *fresh = create_site(key, frames, depth, py);
        std::lock_guard<std::mutex> guard(g_insert_lock);
        for (site = bucket.load(std::memory_order_acquire); site; site = site->next)
            if (site->key == key && site->depth == depth &&
                memcmp(site->frames, frames, depth * sizeof(uintptr_t)) == 0 && pyframes_equal(site->py, py))
                break;
        if (!site && fresh) {
            fresh->next = bucket.load(std::memory_order_relaxed);
            bucket.store(fresh, std::memory_order_release);
            fresh->all_next = g_all.load(std::memory_order_relaxed);
            g_all.store(fresh, std::memory_order_release);
            site = fresh;
            fresh = nullptr;
        }
        if (fresh) mi_free(fresh);
    }
    pthread_rwlock_unlock(&g_capture_gate);
    std::atomic_signal_fence(std::memory_order_seq_cst);
    t_capturing = false;
    return site;
}

bool callsite_fork_prepare() {
    t_gate_held = false;
    if (t_capturing) return false; // a signal handler forking from inside a capture
    // Bounded: a capture can wait for the loader's lock (dladdr), and a
    // thread holding that lock (a library constructor) may be the one
    // forking. Past the bound the child simply captures no call sites.
    timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += 1;
    t_gate_held = pthread_rwlock_clockwrlock(&g_capture_gate, CLOCK_MONOTONIC, &deadline) == 0;
    return true;
}

void callsite_fork_parent() {
    if (t_gate_held) pthread_rwlock_unlock(&g_capture_gate);
    t_gate_held = false;
}

void callsite_after_fork_child() {
    // Without the gate a capture may have been inside libunwind, holding the
    // loader's dl_iterate_phdr lock, which glibc does not reset: never walk.
    if (!t_gate_held) g_captures_off = true;
    t_gate_held = false;
    // Buckets and the all-sites list are published by single atomic stores:
    // consistent whoever held these locks.
    g_capture_gate = PTHREAD_RWLOCK_INITIALIZER;
    new (&g_insert_lock) std::mutex();
}

CallSite *callsite_list() { return g_all.load(std::memory_order_acquire); }

std::string callsite_identity_hex(const CallSite *site) {
    char buf[20];
    snprintf(buf, sizeof buf, "%016llx", (unsigned long long)(site ? site->identity : 0));
    return buf;
}

static std::string frame_text(const CallSite *site, unsigned i) {
    uintptr_t ip = site->frames[i];
    const char *module = "?";
    uintptr_t offset = ip;
    module_of(ip, &module, &offset);
    char buf[300];
    snprintf(buf, sizeof buf, "%s+0x%llx", module, (unsigned long long)offset);
    std::string out = buf;
    if (*name_of(site, i)) out += std::string(" ") + name_of(site, i);
    return out;
}

// Python frames first (innermost first), then the native ones: "python
// relpath:qualname:line", written as a rule's python key takes it.
static std::vector<std::string> frame_texts(const CallSite *site, unsigned max_frames) {
    std::vector<std::string> out;
    for (unsigned i = 0; i < site->py.depth && out.size() < max_frames; i++)
        out.push_back(std::string("python ") + py_name_of(site, i));
    for (unsigned i = 0; i < site->depth && out.size() < max_frames; i++) out.push_back(frame_text(site, i));
    return out;
}

std::string callsite_describe(const CallSite *site, unsigned max_frames) {
    if (!site) return "call site unknown";
    std::string out;
    for (const std::string &f : frame_texts(site, max_frames)) out += (out.empty() ? "" : " <- ") + f;
    return out;
}

std::string callsite_stats_json() {
    std::string out = "[";
    bool first = true;
    for (CallSite *s = callsite_list(); s; s = s->all_next) {
        if (!first) out += ",";
        first = false;
        char head[400];
        snprintf(head, sizeof head,
                 "{\"id\":\"%s\",\"allocs\":%llu,\"bytes\":%llu,\"fallbacks\":%llu,"
                 "\"backing\":{\"disk\":%llu,\"memory\":%llu,\"anon\":%llu},\"access\":\"%s\","
                 "\"rule_line\":%d,\"classified_after_ms\":%.1f,",
                 callsite_identity_hex(s).c_str(), (unsigned long long)s->allocs.load(),
                 (unsigned long long)s->bytes.load(), (unsigned long long)s->fallbacks.load(),
                 (unsigned long long)s->by_backing[1].load(), (unsigned long long)s->by_backing[2].load(),
                 (unsigned long long)s->by_backing[3].load(), access_name((Access)s->access.load()),
                 s->rule ? s->rule->line : 0, s->classified_after_ns.load() / 1e6);
        out += head;
        out += "\"evidence\":" + json_quote(s->evidence) + ",\"frames\":[";
        bool first_frame = true;
        for (const std::string &f : frame_texts(s, 8 + s->py.depth)) {
            out += (first_frame ? "" : ",") + json_quote(f);
            first_frame = false;
        }
        out += "]}";
    }
    return out + "]";
}

void callsite_log_summary() {
    if (!log_enabled(LogLevel::info)) return;
    for (CallSite *s = callsite_list(); s; s = s->all_next)
        SPW_LOG(info, "site %s: %llu allocations, %s, disk/memory/anon %llu/%llu/%llu, %llu "
                      "fallbacks, access %s; %s",
                callsite_identity_hex(s).c_str(), (unsigned long long)s->allocs.load(),
                format_size(s->bytes.load()).c_str(), (unsigned long long)s->by_backing[1].load(),
                (unsigned long long)s->by_backing[2].load(), (unsigned long long)s->by_backing[3].load(),
                (unsigned long long)s->fallbacks.load(), access_name((Access)s->access.load()),
                callsite_describe(s, 3).c_str());
}

} // namespace spillway
