// compile_me.cpp — input for the "g++ compiles a C++ file" workload: heavy on
// templates and the standard library so the compiler allocates a lot
// (g++ -O2 -c; the object file is discarded). Not run, only compiled.
#include <algorithm>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <unordered_map>
#include <variant>
#include <vector>

namespace bench {

template <typename K, typename V> struct Index {
    std::map<K, std::vector<V>> by_key;
    std::unordered_map<V, std::set<K>> reverse;
    void add(const K &k, const V &v) {
        by_key[k].push_back(v);
        reverse[v].insert(k);
    }
    std::optional<V> first(const K &k) const {
        auto it = by_key.find(k);
        if (it == by_key.end() || it->second.empty()) return std::nullopt;
        return it->second.front();
    }
};

using Value = std::variant<long, double, std::string, std::vector<int>>;

std::string describe(const Value &v) {
    return std::visit(
        [](const auto &x) -> std::string {
            using T = std::decay_t<decltype(x)>;
            std::ostringstream out;
            if constexpr (std::is_same_v<T, std::vector<int>>) {
                out << "[";
                for (int i : x) out << i << ",";
                out << "]";
            } else {
                out << x;
            }
            return out.str();
        },
        v);
}

template <int N> struct Unroll {
    template <typename F> static long run(F &&f, long acc) { return Unroll<N - 1>::run(f, f(acc + N)); }
};
template <> struct Unroll<0> {
    template <typename F> static long run(F &&, long acc) { return acc; }
};

long unrolled(long seed) {
    return Unroll<120>::run([](long x) { return (x * 31) ^ (x >> 3); }, seed);
}

std::vector<std::string> tokens(const std::string &text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string w; in >> w;) out.push_back(w);
    return out;
}

struct Shape {
    virtual ~Shape() = default;
    virtual double area() const = 0;
};
template <int Sides> struct Polygon : Shape {
    double side;
    explicit Polygon(double s) : side(s) {}
    double area() const override { return Sides * side * side / 4.0; }
};

std::vector<std::unique_ptr<Shape>> shapes(int n) {
    std::vector<std::unique_ptr<Shape>> out;
    for (int i = 0; i < n; i++) {
        switch (i % 6) {
        case 0: out.push_back(std::make_unique<Polygon<3>>(i)); break;
        case 1: out.push_back(std::make_unique<Polygon<4>>(i)); break;
        case 2: out.push_back(std::make_unique<Polygon<5>>(i)); break;
        case 3: out.push_back(std::make_unique<Polygon<6>>(i)); break;
        case 4: out.push_back(std::make_unique<Polygon<7>>(i)); break;
        default: out.push_back(std::make_unique<Polygon<8>>(i)); break;
        }
    }
    return out;
}

std::map<std::string, std::tuple<int, double, std::string>> table(const std::vector<std::string> &words) {
    std::map<std::string, std::tuple<int, double, std::string>> out;
    for (size_t i = 0; i < words.size(); i++) {
        auto &[count, weight, last] = out[words[i]];
        count++;
        weight += 1.0 / double(i + 1);
        last = words[(i + 1) % words.size()];
    }
    return out;
}

} // namespace bench

int main(int argc, char **argv) {
    bench::Index<std::string, int> idx;
    std::vector<std::string> words = bench::tokens(argc > 1 ? argv[1] : "a b 1 2.5 c_d");
    for (size_t i = 0; i < words.size(); i++) idx.add(words[i], int(i));
    std::vector<bench::Value> values = {1L, 2.5, std::string("x"), std::vector<int>{1, 2, 3}};
    for (const auto &v : values) std::cout << bench::describe(v) << "\n";
    double total = 0;
    for (const auto &s : bench::shapes(60)) total += s->area();
    auto t = bench::table(words);
    std::cout << total << " " << t.size() << " " << bench::unrolled(argc) << " "
              << idx.first("a").value_or(-1) << "\n";
    std::vector<long> v(100);
    std::iota(v.begin(), v.end(), 0);
    std::sort(v.begin(), v.end(), std::greater<>());
    std::cout << std::accumulate(v.begin(), v.end(), 0L) << "\n";
}
