// symbols.cpp — see symbols.h. A minimal reader of ELF symbol tables: the
// section headers, SHT_SYMTAB / SHT_DYNSYM with their string tables, and the
// GNU build-id note; every offset is checked against the file's size.
#include "sites/symbols.h"

#include <atomic>
#include <cstring>
#include <cxxabi.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace spillway {

namespace {

struct Mapped {
    const unsigned char *data = nullptr;
    size_t size = 0;
    Mapped() = default;
    Mapped(const Mapped &) = delete;
    ~Mapped() {
        if (data) munmap((void *)data, size);
    }
    const ElfW(Ehdr) *ehdr() const { return (const ElfW(Ehdr) *)data; }
    const ElfW(Shdr) *shdr(unsigned i) const {
        return (const ElfW(Shdr) *)(data + ehdr()->e_shoff + (size_t)i * ehdr()->e_shentsize);
    }
    bool holds(uint64_t offset, uint64_t len) const { return offset <= size && len <= size - offset; }
};

bool map_elf(const char *path, Mapped &m) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    struct stat st;
    void *p = MAP_FAILED;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= (off_t)sizeof(ElfW(Ehdr)))
        p = mmap(nullptr, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (p == MAP_FAILED) return false;
    m.data = (const unsigned char *)p;
    m.size = (size_t)st.st_size;
    const ElfW(Ehdr) *e = m.ehdr();
    return memcmp(e->e_ident, ELFMAG, SELFMAG) == 0 && e->e_ident[EI_CLASS] == (sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32) &&
           e->e_shentsize == sizeof(ElfW(Shdr)) && m.holds(e->e_shoff, (uint64_t)e->e_shnum * e->e_shentsize);
}

const ElfW(Shdr) *section_of_type(const Mapped &m, uint32_t type) {
    for (unsigned i = 0; i < m.ehdr()->e_shnum; i++) {
        const ElfW(Shdr) *s = m.shdr(i);
        if (s->sh_type == type && s->sh_size && m.holds(s->sh_offset, s->sh_size) && s->sh_link < m.ehdr()->e_shnum)
            return s;
    }
    return nullptr;
}

// "/usr/lib/debug/.build-id/xx/yyyy.debug" from the NT_GNU_BUILD_ID note.
std::string debug_file_of(const Mapped &m) {
    for (unsigned i = 0; i < m.ehdr()->e_shnum; i++) {
        const ElfW(Shdr) *s = m.shdr(i);
        if (s->sh_type != SHT_NOTE || !m.holds(s->sh_offset, s->sh_size)) continue;
        const unsigned char *p = m.data + s->sh_offset, *end = p + s->sh_size;
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)p;
            const unsigned char *name = p + sizeof *n;
            const unsigned char *desc = name + ((n->n_namesz + 3) & ~3u);
            if (desc + n->n_descsz > end) break;
            if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && !memcmp(name, "GNU", 4) && n->n_descsz > 1) {
                static const char hex[] = "0123456789abcdef";
                std::string path = "/usr/lib/debug/.build-id/";
                for (unsigned b = 0; b < n->n_descsz; b++) {
                    path += hex[desc[b] >> 4];
                    path += hex[desc[b] & 15];
                    if (b == 0) path += '/';
                }
                return path + ".debug";
            }
            p = desc + ((n->n_descsz + 3) & ~3u);
        }
    }
    return "";
}

struct Best {
    const char *name = nullptr;
    uint64_t start = 0;
    bool exact = false;
};

void scan(const Mapped &m, const ElfW(Shdr) *table, uint64_t addr, Best &best) {
    const ElfW(Shdr) *strtab = m.shdr(table->sh_link);
    if (!m.holds(strtab->sh_offset, strtab->sh_size) || table->sh_entsize != sizeof(ElfW(Sym))) return;
    const ElfW(Sym) *syms = (const ElfW(Sym) *)(m.data + table->sh_offset);
    size_t count = table->sh_size / sizeof(ElfW(Sym));
    const char *strings = (const char *)(m.data + strtab->sh_offset);
    for (size_t i = 0; i < count; i++) {
        const ElfW(Sym) &s = syms[i];
        unsigned type = ELF64_ST_TYPE(s.st_info);
        if ((type != STT_FUNC && type != STT_GNU_IFUNC) || s.st_shndx == SHN_UNDEF || !s.st_value ||
            s.st_name >= strtab->sh_size || s.st_value > addr)
            continue;
        const char *name = strings + s.st_name;
        if (!*name) continue;
        if (addr < s.st_value + s.st_size) {
            best = {name, s.st_value, true};
            return;
        }
        if (!best.name || s.st_value > best.start) best = {name, s.st_value, false};
    }
}

std::string demangled(const char *name) {
    int status = 0;
    char *d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
    std::string out = (status == 0 && d) ? d : name;
    free(d);
    return out;
}

// Mapped objects (and their debug files), kept for the life of the process
// so a module's pages are faulted in once, not once per frame. Slots are
// claimed with a CAS and published when filled, so lookups take no lock
// (and a fork cannot leave one held); a full cache or a slot still being
// filled by another thread means a private mapping for this one lookup.
struct Image {
    std::atomic<int> state{0}; // 0 free, 1 being filled, 2 ready
    char path[256] = {0};
    Mapped file, debug;
    const ElfW(Shdr) *symtab = nullptr, *dynsym = nullptr;
    const Mapped *full = nullptr; // the mapping that holds symtab
};
constexpr int kImages = 48;
// Never destroyed. Code runs after this library's static destructors: other
// libraries' destructors, the program's own, and the engine's exit stats.
// A large allocation there names its call site here (with a stats file, a
// profile or an info log), and with the images unmapped under it every
// such process died of SIGSEGV at exit (pandas' test suite, whose stats
// line is larger than a 64 KiB threshold; tests/programs/exit_allocations).
union ImageCache {
    Image slots[kImages];
    ImageCache() : slots() {}
    ~ImageCache() {}
};
ImageCache g_images;

void fill(Image &im, const char *path) {
    if (!map_elf(path, im.file)) return;
    im.full = &im.file;
    im.symtab = section_of_type(im.file, SHT_SYMTAB);
    im.dynsym = section_of_type(im.file, SHT_DYNSYM);
    if (!im.symtab) {
        std::string debug_path = debug_file_of(im.file);
        if (!debug_path.empty() && map_elf(debug_path.c_str(), im.debug)) {
            im.symtab = section_of_type(im.debug, SHT_SYMTAB);
            im.full = &im.debug;
        }
    }
}

SymbolName lookup(const Image &im, uint64_t addr) {
    SymbolName out;
    if (!im.file.data) return out;
    Best best;
    if (im.symtab) scan(*im.full, im.symtab, addr, best);
    // Both tables: a full table wins when it has the containing symbol; a
    // dynamic symbol may still contain an address the full table lacks.
    Best dyn;
    if (!best.exact && im.dynsym) scan(im.file, im.dynsym, addr, dyn);
    if (dyn.exact || (dyn.name && (!best.name || dyn.start > best.start))) best = dyn;
    if (!best.name) return out;
    out.name = demangled(best.name);
    out.guess = !best.exact;
    return out;
}

} // namespace

SymbolName symbol_for(const char *path, uintptr_t load_bias, uintptr_t ip) {
    if (!path || !*path) return {};
    uint64_t addr = (uint64_t)(ip - 1 - load_bias);
    bool cacheable = strlen(path) < sizeof(Image::path);
    for (Image &im : g_images.slots) {
        int state = im.state.load(std::memory_order_acquire);
        if (state == 2 && strcmp(im.path, path) == 0) return lookup(im, addr);
        if (state == 0 && cacheable) {
            int expected = 0;
            if (!im.state.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) continue;
            strcpy(im.path, path);
            fill(im, path);
            im.state.store(2, std::memory_order_release);
            return lookup(im, addr);
        }
    }
    Image once; // cache full: map for this lookup only
    fill(once, path);
    return lookup(once, addr);
}

std::string symbol_text(const SymbolName &s) { return s.name.empty() ? "" : s.guess ? s.name + "?" : s.name; }

} // namespace spillway
