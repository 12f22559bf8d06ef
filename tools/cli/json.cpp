// json.cpp — see json.h. A recursive-descent parser with a depth limit, so
// a corrupt line cannot exhaust the stack.
#include "json.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace spillway::cli {

const JsonValue *JsonValue::get(std::string_view key) const {
    if (kind != Kind::object) return nullptr;
    for (const auto &[k, v] : members)
        if (k == key) return &v;
    return nullptr;
}

uint64_t JsonValue::count(std::string_view key) const {
    const JsonValue *v = get(key);
    return v && v->kind == Kind::number && v->is_integer ? v->integer : 0;
}

namespace {

class Parser {
  public:
    explicit Parser(std::string_view text) : s_(text) {}

    bool document(JsonValue &out) {
        if (!value(out, 0)) return false;
        skip_space();
        if (at_ != s_.size()) return fail("unexpected text after the value");
        return true;
    }

    std::string error() const { return error_ + " at byte " + std::to_string(at_); }

  private:
    static constexpr int kMaxDepth = 64;

    bool fail(const char *what) {
        if (error_.empty()) error_ = what;
        return false;
    }

    void skip_space() {
        while (at_ < s_.size() && (s_[at_] == ' ' || s_[at_] == '\t' || s_[at_] == '\n' || s_[at_] == '\r'))
            at_++;
    }

    bool literal(std::string_view word) {
        if (s_.substr(at_, word.size()) != word) return fail("invalid literal");
        at_ += word.size();
        return true;
    }

    bool value(JsonValue &out, int depth) {
        if (depth > kMaxDepth) return fail("nested too deeply");
        skip_space();
        if (at_ >= s_.size()) return fail("unexpected end of input");
        char c = s_[at_];
        if (c == '{') return object(out, depth);
        if (c == '[') return array(out, depth);
        if (c == '"') {
            out.kind = JsonValue::Kind::string;
            return string(out.text);
        }
        if (c == 't' || c == 'f') {
            out.kind = JsonValue::Kind::boolean;
            out.boolean = c == 't';
            return literal(c == 't' ? "true" : "false");
        }
        if (c == 'n') {
            out.kind = JsonValue::Kind::null;
            return literal("null");
        }
        return number(out);
    }

    bool object(JsonValue &out, int depth) {
        out.kind = JsonValue::Kind::object;
        at_++; // {
        skip_space();
        if (at_ < s_.size() && s_[at_] == '}') {
            at_++;
            return true;
        }
        for (;;) {
            skip_space();
            std::string key;
            if (at_ >= s_.size() || s_[at_] != '"') return fail("expected a member name");
            if (!string(key)) return false;
            skip_space();
            if (at_ >= s_.size() || s_[at_] != ':') return fail("expected ':'");
            at_++;
            JsonValue v;
            if (!value(v, depth + 1)) return false;
            out.members.emplace_back(std::move(key), std::move(v));
            skip_space();
            if (at_ < s_.size() && s_[at_] == ',') {
                at_++;
                continue;
            }
            if (at_ < s_.size() && s_[at_] == '}') {
                at_++;
                return true;
            }
            return fail("expected ',' or '}'");
        }
    }

    bool array(JsonValue &out, int depth) {
        out.kind = JsonValue::Kind::array;
        at_++; // [
        skip_space();
        if (at_ < s_.size() && s_[at_] == ']') {
            at_++;
            return true;
        }
        for (;;) {
            JsonValue v;
            if (!value(v, depth + 1)) return false;
            out.items.push_back(std::move(v));
            skip_space();
            if (at_ < s_.size() && s_[at_] == ',') {
                at_++;
                continue;
            }
            if (at_ < s_.size() && s_[at_] == ']') {
                at_++;
                return true;
            }
            return fail("expected ',' or ']'");
        }
    }

    static void append_utf8(std::string &out, unsigned cp) {
        if (cp < 0x80) {
            out += (char)cp;
        } else if (cp < 0x800) {
            out += (char)(0xC0 | (cp >> 6));
            out += (char)(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            out += (char)(0xE0 | (cp >> 12));
            out += (char)(0x80 | ((cp >> 6) & 0x3F));
            out += (char)(0x80 | (cp & 0x3F));
        } else {
            out += (char)(0xF0 | (cp >> 18));
            out += (char)(0x80 | ((cp >> 12) & 0x3F));
            out += (char)(0x80 | ((cp >> 6) & 0x3F));
            out += (char)(0x80 | (cp & 0x3F));
        }
    }

    bool hex4(unsigned &out) {
        if (at_ + 4 > s_.size()) return fail("truncated \\u escape");
        out = 0;
        for (int i = 0; i < 4; i++) {
            char h = s_[at_++];
            out <<= 4;
            if (h >= '0' && h <= '9') out |= (unsigned)(h - '0');
            else if (h >= 'a' && h <= 'f') out |= (unsigned)(h - 'a' + 10);
            else if (h >= 'A' && h <= 'F') out |= (unsigned)(h - 'A' + 10);
            else return fail("invalid \\u escape");
        }
        return true;
    }

    bool string(std::string &out) {
        at_++; // opening quote
        while (at_ < s_.size()) {
            char c = s_[at_++];
            if (c == '"') return true;
            if ((unsigned char)c < 0x20) return fail("control character in a string");
            if (c != '\\') {
                out += c;
                continue;
            }
            if (at_ >= s_.size()) break;
            char e = s_[at_++];
            switch (e) {
            case '"': out += '"'; break;
            case '\\': out += '\\'; break;
            case '/': out += '/'; break;
            case 'b': out += '\b'; break;
            case 'f': out += '\f'; break;
            case 'n': out += '\n'; break;
            case 'r': out += '\r'; break;
            case 't': out += '\t'; break;
            case 'u': {
                unsigned cp;
                if (!hex4(cp)) return false;
                if (cp >= 0xD800 && cp < 0xDC00 && s_.substr(at_, 2) == "\\u") {
                    at_ += 2;
                    unsigned low;
                    if (!hex4(low)) return false;
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
                }
                append_utf8(out, cp);
                break;
            }
            default: return fail("invalid escape");
            }
        }
        return fail("unterminated string");
    }

    bool number(JsonValue &out) {
        size_t start = at_;
        if (at_ < s_.size() && s_[at_] == '-') at_++;
        bool integral = true;
        while (at_ < s_.size()) {
            char c = s_[at_];
            if (c >= '0' && c <= '9') {
                at_++;
            } else if (c == '.' || c == 'e' || c == 'E' || c == '+' || (c == '-' && at_ > start)) {
                integral = false;
                at_++;
            } else {
                break;
            }
        }
        std::string text(s_.substr(start, at_ - start));
        if (text.empty() || text == "-") return fail("expected a value");
        char *end = nullptr;
        out.kind = JsonValue::Kind::number;
        out.number = strtod(text.c_str(), &end);
        if (*end) return fail("malformed number");
        if (integral && text[0] != '-') {
            out.integer = strtoull(text.c_str(), nullptr, 10);
            out.is_integer = true;
        }
        return true;
    }

    std::string_view s_;
    size_t at_ = 0;
    std::string error_;
};

} // namespace

bool parse_json(std::string_view text, JsonValue &out, std::string &error) {
    Parser p(text);
    out = JsonValue();
    if (p.document(out)) return true;
    error = p.error();
    return false;
}

} // namespace spillway::cli
