// child_config.cpp — see child_config.h.
#include "child_config.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <unistd.h>

namespace spillway::cli {

static std::string toml_string(const std::string &s) {
    std::string out = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') out += '\\';
        out += c;
    }
    return out + "\"";
}

static bool write_file(const std::string &path, const std::string &text) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    return out.good();
}

static std::string temp_root() {
    const char *t = getenv("TMPDIR");
    return t && *t == '/' ? t : "/tmp";
}

ChildConfig compose_child_config(const Settings &s, const std::string &user_config,
                                 const std::string &user_text) {
    ChildConfig c;
    if (!s.stats_file.empty()) {
        c.config_path = user_config; // the user chose where stats go; leave the file alone
        c.stats_pattern = s.stats_file;
        c.text = user_text;
        return c;
    }
    std::string templ = temp_root() + "/spillway-run.XXXXXX";
    if (!mkdtemp(templ.data())) {
        c.error = "cannot create a temporary directory under " + temp_root() + " (" + strerror(errno) +
                  "); set TMPDIR to a writable directory, or set [stats] file in the config";
        return c;
    }
    c.temp_dir = templ;
    c.stats_pattern = c.temp_dir + "/stats.jsonl";
    c.stats_are_ours = true;
    c.config_path = c.temp_dir + "/config.toml";

    std::string appended = user_text + "\n# added by `spillway run`: where the shim reports what it did\n"
                                       "[stats]\nfile = " + toml_string(c.stats_pattern) + "\n";
    Settings check;
    std::string text = appended;
    if (parse_config_text(appended, c.config_path, check) || check.stats_file != c.stats_pattern) {
        Settings with_stats = s;
        with_stats.stats_file = c.stats_pattern;
        text = describe_settings(with_stats);
    }
    if (!write_file(c.config_path, text)) {
        c.error = "cannot write " + c.config_path + " (" + strerror(errno) +
                  "); set TMPDIR to a writable directory with room, or set [stats] file in the config";
        remove_child_config(c);
        c.temp_dir.clear();
    }
    c.text = text;
    return c;
}

void remove_child_config(const ChildConfig &c) {
    if (c.temp_dir.empty()) return;
    // Only the files we (and the shim, on our behalf) put there.
    if (DIR *d = opendir(c.temp_dir.c_str())) {
        while (struct dirent *e = readdir(d)) {
            std::string name = e->d_name;
            if (name != "." && name != "..") unlink((c.temp_dir + "/" + name).c_str());
        }
        closedir(d);
    }
    rmdir(c.temp_dir.c_str());
}

} // namespace spillway::cli
