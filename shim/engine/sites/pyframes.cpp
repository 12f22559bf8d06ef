// pyframes.cpp — see pyframes.h.
//
// How a frame is read. The interpreter's public C API to walk frames
// (PyThreadState_GetFrame, PyFrame_GetBack, PyFrame_GetCode) needs the GIL,
// allocates frame objects on 3.11+ (which can run the garbage collector,
// i.e. arbitrary finalizers, inside malloc) and changes reference counts.
// None of that is allowed here, and the GIL is usually not held anyway
// (PyTorch releases it around every operator). So the walk reads the
// calling thread's own frame chain through the layouts below, one per
// interpreter version, and uses the public API only where it is read-only:
// PyGILState_GetThisThreadState (this thread's state, from thread-local
// storage), PyFrame_GetLineNumber / PyCode_Addr2Line (the line table),
// PyUnicode_AsUTF8AndSize on compact ASCII strings (their inline bytes).
// Every pointer read is checked against PyCode_Type / PyUnicode_Type before
// it is trusted; an unknown version captures nothing.
#include "sites/pyframes.h"

#include "size_parse.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

namespace spillway {

namespace {

// Offsets on x86-64 and aarch64 (LP64), from each version's headers
// (Include/cpython/pystate.h, Include/internal/pycore_frame.h,
// Include/cpython/code.h). Layouts are fixed within a minor version.
struct Layout {
    int minor;
    bool frame_objects;   // 3.8-3.10: PyFrameObject chain; 3.11+: _PyInterpreterFrame
    size_t ts_frame;      // PyThreadState: frame / cframe / current_frame
    long cframe_current;  // -1: ts_frame already points at the frame
    size_t f_code, f_back, f_instr; // f_instr: prev_instr / instr_ptr (3.11+)
    long f_owner;         // -1: no C-stack shim frames in this version
    size_t co_filename, co_name; // co_qualname from 3.11
    size_t co_code;       // co_code_adaptive (3.11+)
};

constexpr Layout kLayouts[] = {
    {8, true, 24, -1, 32, 24, 0, -1, 104, 112, 0},
    {9, true, 24, -1, 32, 24, 0, -1, 104, 112, 0},
    {10, true, 24, -1, 32, 24, 0, -1, 104, 112, 0},
    {11, false, 56, 8, 32, 48, 56, -1, 112, 128, 184},
    {12, false, 56, 0, 0, 8, 56, 70, 112, 128, 192},
    {13, false, 72, -1, 0, 8, 56, 70, 112, 128, 200},
};
constexpr char kOwnedByCStack = 3; // 3.12+: an entry frame of C code, not Python

struct Api {
    int (*is_initialized)() = nullptr;
    void *(*this_thread_state)() = nullptr;
    int (*frame_line)(void *) = nullptr;           // PyFrame_GetLineNumber
    int (*code_addr2line)(void *, int) = nullptr;  // PyCode_Addr2Line
    const char *(*utf8)(void *, ssize_t *) = nullptr;
    const void *code_type = nullptr, *unicode_type = nullptr;
};

Api g_api;
const Layout *g_layout = nullptr;
unsigned g_depth = 0;
char g_mode[64] = "none";
std::string *g_main_dir = nullptr, *g_cwd = nullptr;

thread_local bool t_walking __attribute__((tls_model("initial-exec"))) = false;

template <class T> T field(const void *base, size_t offset) {
    T v;
    memcpy(&v, (const char *)base + offset, sizeof v);
    return v;
}

const void *type_of(const void *obj) { return field<const void *>(obj, 8); }

// The main script's directory from /proc/self/cmdline: the first argument
// after the interpreter's own options that names a file ("python3 -u
// train.py ..."). Read once at start-up, before any Python runs.
std::string main_script_dir() {
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return "";
    char buf[4096];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return "";
    buf[n] = 0;
    const char *arg = buf + strlen(buf) + 1; // skip argv[0]
    for (; arg < buf + n; arg += strlen(arg) + 1) {
        if (!strcmp(arg, "-m") || !strcmp(arg, "-c")) return ""; // no script file
        if (arg[0] == '-') {
            // Options that take a separate value.
            if (!strcmp(arg, "-W") || !strcmp(arg, "-X")) arg += strlen(arg) + 1;
            continue;
        }
        char *real = realpath(arg, nullptr);
        if (!real) return "";
        std::string dir = real;
        free(real);
        size_t slash = dir.rfind('/');
        return slash == std::string::npos ? "" : dir.substr(0, slash);
    }
    return "";
}

// Inline bytes of a compact ASCII str (the state word after ob_refcnt,
// ob_type, length, hash: bit 5 compact, bit 6 ascii in 3.8-3.13); nullptr
// for anything that might make PyUnicode_AsUTF8AndSize allocate.
const char *ascii_of(const void *str) {
    if (!str || type_of(str) != g_api.unicode_type) return nullptr;
    uint32_t state = field<uint32_t>(str, 32);
    if (!(state & (1u << 5)) || !(state & (1u << 6))) return nullptr;
    ssize_t size = 0;
    return g_api.utf8((void *)str, &size);
}

} // namespace

std::string pyframes_relative_path(const std::string &path, const std::string &main_dir,
                                   const std::string &cwd) {
    for (const char *root : {"/site-packages/", "/dist-packages/"}) {
        size_t at = path.rfind(root);
        if (at != std::string::npos) return path.substr(at + strlen(root));
    }
    for (const std::string *dir : {&main_dir, &cwd})
        if (!dir->empty() && path.size() > dir->size() && path.compare(0, dir->size(), *dir) == 0 &&
            path[dir->size()] == '/')
            return path.substr(dir->size() + 1);
    // The standard library: ".../lib/python3.11/json/decoder.py" -> "python3.11/json/decoder.py".
    size_t lib = path.rfind("/lib/python");
    if (lib != std::string::npos) return path.substr(lib + 5);
    return path;
}

void pyframes_init(unsigned depth) {
    g_depth = depth > kMaxPyFrames ? kMaxPyFrames : depth;
    g_layout = nullptr;
    snprintf(g_mode, sizeof g_mode, "none");
    auto version = (const char *(*)())dlsym(RTLD_DEFAULT, "Py_GetVersion");
    if (!version || !g_depth) return;
    int major = 0, minor = 0;
    if (sscanf(version(), "%d.%d", &major, &minor) != 2) return;
    g_api.is_initialized = (int (*)())dlsym(RTLD_DEFAULT, "Py_IsInitialized");
    g_api.this_thread_state = (void *(*)())dlsym(RTLD_DEFAULT, "PyGILState_GetThisThreadState");
    g_api.frame_line = (int (*)(void *))dlsym(RTLD_DEFAULT, "PyFrame_GetLineNumber");
    g_api.code_addr2line = (int (*)(void *, int))dlsym(RTLD_DEFAULT, "PyCode_Addr2Line");
    g_api.utf8 = (const char *(*)(void *, ssize_t *))dlsym(RTLD_DEFAULT, "PyUnicode_AsUTF8AndSize");
    g_api.code_type = dlsym(RTLD_DEFAULT, "PyCode_Type");
    g_api.unicode_type = dlsym(RTLD_DEFAULT, "PyUnicode_Type");
    // A free-threaded build (3.13t) has another object header: not read.
    bool free_threaded = dlsym(RTLD_DEFAULT, "_Py_MergeZeroLocalRefcount") != nullptr ||
                         dlsym(RTLD_DEFAULT, "_Py_DecRefShared") != nullptr;
    const Layout *layout = nullptr;
    for (const Layout &l : kLayouts)
        if (major == 3 && l.minor == minor) layout = &l;
    bool api_ok = g_api.is_initialized && g_api.this_thread_state && g_api.frame_line &&
                  g_api.code_addr2line && g_api.utf8 && g_api.code_type && g_api.unicode_type;
    if (!layout || !api_ok || free_threaded) {
        snprintf(g_mode, sizeof g_mode, "unsupported Python %d.%d%s", major, minor,
                 free_threaded ? " (free-threaded)" : "");
        return;
    }
    g_layout = layout;
    g_main_dir = new std::string(main_script_dir());
    char cwd[4096];
    g_cwd = new std::string(getcwd(cwd, sizeof cwd) ? cwd : "");
    snprintf(g_mode, sizeof g_mode, "Python %d.%d", major, minor);
}

const char *pyframes_mode() { return g_mode; }

void pyframes_capture(PyStack &out) {
    out.depth = 0;
    if (!g_layout || t_walking) return;
    t_walking = true;
    const Layout &L = *g_layout;
    const void *tstate = g_api.is_initialized() ? g_api.this_thread_state() : nullptr;
    const void *frame = nullptr;
    if (tstate) {
        frame = field<const void *>(tstate, L.ts_frame);
        if (frame && L.cframe_current >= 0) frame = field<const void *>(frame, (size_t)L.cframe_current);
    }
    for (int guard = 0; frame && out.depth < g_depth && guard < 1000; guard++) {
        const void *code = field<const void *>(frame, L.f_code);
        const void *back = field<const void *>(frame, L.f_back);
        if (L.f_owner >= 0 && field<char>(frame, (size_t)L.f_owner) == kOwnedByCStack) {
            frame = back;
            continue;
        }
        if (!code || type_of(code) != g_api.code_type) break; // not what the layout promised
        int line;
        if (L.frame_objects) {
            line = g_api.frame_line((void *)frame);
        } else {
            // Byte offset of the instruction being executed (prev_instr in
            // 3.11/3.12, instr_ptr in 3.13: both name the CALL in flight).
            const char *instr = field<const char *>(frame, L.f_instr);
            const char *start = (const char *)code + L.co_code;
            line = g_api.code_addr2line((void *)code, (int)(instr - start));
        }
        out.frames[out.depth++] = PyFrame{code, line};
        frame = back;
    }
    t_walking = false;
}

uint64_t pyframes_mix(uint64_t key, const PyStack &s) {
    for (unsigned i = 0; i < s.depth; i++) {
        key ^= (uint64_t)(uintptr_t)s.frames[i].code + 0x9e3779b97f4a7c15ull + (key << 6) + (key >> 2);
        key = (key ^ (uint64_t)(uint32_t)s.frames[i].line) * 0xff51afd7ed558ccdull;
    }
    return key;
}

bool pyframes_equal(const PyStack &a, const PyStack &b) {
    if (a.depth != b.depth) return false;
    for (unsigned i = 0; i < a.depth; i++)
        if (a.frames[i].code != b.frames[i].code || a.frames[i].line != b.frames[i].line) return false;
    return true;
}

std::string pyframes_text(const PyStack &s, unsigned i) {
    if (i >= s.depth || !g_layout) return "";
    const void *code = s.frames[i].code;
    const char *file = ascii_of(field<const void *>(code, g_layout->co_filename));
    const char *name = ascii_of(field<const void *>(code, g_layout->co_name));
    std::string out = file ? pyframes_relative_path(file, *g_main_dir, *g_cwd) : "?";
    out += ":";
    out += name ? name : "?";
    return out + ":" + std::to_string(s.frames[i].line);
}

bool pyframe_matches(const std::string &glob, const char *text) {
    if (glob_match(glob, text)) return true;
    const char *colon = strrchr(text, ':');
    return colon && glob_match(glob, std::string_view(text, (size_t)(colon - text)));
}

} // namespace spillway
