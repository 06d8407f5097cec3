#include "check.hpp"

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

// docs/bad_inputs.md cannot drift from the checks: every check its tables name is a TEST_CASE
// of tests/ (or a command-line check of the minigpt program, or a fuzz corpus), and every
// TEST_CASE of a *_reliability.cpp or *_bad_inputs.cpp file (the reproducers of bad inputs)
// has a row.

#ifndef WB_SOURCE_DIR
#define WB_SOURCE_DIR "."
#endif

namespace {

namespace fs = std::filesystem;

std::string read_text(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
}

// The string literals that follow `at` (skipping blanks), joined as C++ joins them:
// "a" "b" -> ab; with `only_first`, the first one (CMake's arguments are separate).
std::string literals_at(const std::string& text, std::size_t at, bool only_first) {
    std::string out;
    for (bool first = true;; first = false) {
        if (!first && only_first) return out;
        while (at < text.size() && (text[at] == ' ' || text[at] == '\n' || text[at] == '\t')) ++at;
        if (at >= text.size() || text[at] != '"') return out;
        for (++at; at < text.size() && text[at] != '"'; ++at) {
            if (text[at] == '\\' && at + 1 < text.size()) ++at;
            out += text[at];
        }
        ++at;
    }
}

std::vector<std::string> names_after(const std::string& text, const std::string& opening,
                                     bool only_first = false) {
    std::vector<std::string> names;
    for (std::size_t at = text.find(opening); at != std::string::npos;
         at = text.find(opening, at + 1)) {
        const std::string name = literals_at(text, at + opening.size(), only_first);
        if (!name.empty()) names.push_back(name);
    }
    return names;
}

std::string trim(std::string s) {
    const auto b = s.find_first_not_of(' ');
    const auto e = s.find_last_not_of(' ');
    return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

std::string unescape(std::string s) {
    for (const auto& [from, to] : {std::pair<std::string, std::string>{"&lt;", "<"},
                                   {"&gt;", ">"},
                                   {"&amp;", "&"},
                                   {"\\|", "|"}}) {
        for (auto at = s.find(from); at != std::string::npos; at = s.find(from, at + 1)) {
            s.replace(at, from.size(), to);
        }
    }
    return s;
}

// The cells of a Markdown table row `| a | b | c |` (an escaped \| stays in its cell).
std::vector<std::string> cells(const std::string& line) {
    std::vector<std::string> out;
    std::string cell;
    for (std::size_t i = 1; i < line.size(); ++i) {
        if (line[i] == '\\' && i + 1 < line.size() && line[i + 1] == '|') {
            cell += "\\|";
            ++i;
        } else if (line[i] == '|') {
            out.push_back(trim(cell));
            cell.clear();
        } else {
            cell += line[i];
        }
    }
    return out;
}

}  // namespace

TEST_CASE("docs/bad_inputs.md names only checks that exist, and every reproducer has a row",
          "[minigpt][docs]") {
    const fs::path root = WB_SOURCE_DIR;
    REQUIRE(fs::exists(root / "docs" / "bad_inputs.md"));

    std::set<std::string> tests, reproducers;
    for (const auto& entry : fs::recursive_directory_iterator(root / "tests")) {
        if (entry.path().extension() != ".cpp") continue;
        const std::string text = read_text(entry.path());
        const std::string stem = entry.path().stem().string();
        auto ends_with = [&](const std::string& tail) {
            return stem.size() >= tail.size() &&
                   stem.compare(stem.size() - tail.size(), tail.size(), tail) == 0;
        };
        const bool reliability =
            stem.find("_reliability") != std::string::npos || ends_with("_bad_inputs");
        for (const std::string& name : names_after(text, "TEST_CASE(")) {
            tests.insert(name);
            if (reliability) reproducers.insert(name);
        }
    }
    // The command-line checks: each `case_ 'NAME' ...` of cli_checks.sh is the ctest "cli NAME".
    std::istringstream cases(read_text(root / "tests/minigpt/cli_checks.sh"));
    for (std::string line; std::getline(cases, line);) {
        if (line.rfind("case_ '", 0) != 0) continue;
        const std::size_t end = line.find('\'', 7);
        if (end != std::string::npos) tests.insert("cli " + line.substr(7, end - 7));
    }
    const std::string cli = read_text(root / "minigpt/CMakeLists.txt");
    for (const std::string& name : names_after(cli, "add_test(NAME", true)) {
        if (name.rfind("minigpt: ", 0) == 0) tests.insert(name.substr(9));
    }
    REQUIRE(tests.size() > 100);

    std::set<std::string> named;
    std::istringstream doc(read_text(root / "docs" / "bad_inputs.md"));
    std::size_t rows = 0;
    for (std::string line; std::getline(doc, line);) {
        if (line.rfind("| ", 0) != 0) continue;
        const std::vector<std::string> row = cells(line);
        if (row.size() < 5 || row[0] == "function" || row[0].rfind("---", 0) == 0) continue;
        ++rows;
        std::string check = unescape(row.back());
        if (check == "—") continue;
        std::size_t start = 0;
        while (start <= check.size()) {
            std::size_t stop = check.find("; ", start);
            if (stop == std::string::npos) stop = check.size();
            const std::string part = trim(check.substr(start, stop - start));
            start = stop + 2;
            if (part.empty()) continue;
            INFO("row: " << line);
            if (part.rfind("fuzz:", 0) == 0) {
                const std::string target = part.substr(5, part.find('/') - 5);
                CHECK(fs::is_directory(root / "tests/fuzz/corpus" / target));
                continue;
            }
            if (part.rfind("…", 0) == 0) {  // "… tail": the end of a name, its start as before
                const std::string tail = trim(part.substr(std::string("…").size()));
                bool found = false;
                for (const std::string& t : tests) {
                    if (t.size() >= tail.size() &&
                        t.compare(t.size() - tail.size(), tail.size(), tail) == 0) {
                        found = true;
                        named.insert(t);
                    }
                }
                INFO("no check ends with: " << tail);
                CHECK(found);
                continue;
            }
            const std::string dots = "…";
            if (part.size() > dots.size() &&
                part.compare(part.size() - dots.size(), dots.size(), dots) == 0) {
                // "head …": the start of a name, its end as in a neighbouring part
                const std::string head = trim(part.substr(0, part.size() - dots.size()));
                bool found = false;
                for (const std::string& t : tests) {
                    if (t.rfind(head, 0) == 0) {
                        found = true;
                        named.insert(t);
                    }
                }
                INFO("no check starts with: " << head);
                CHECK(found);
                continue;
            }
            INFO("no check is named: " << part);
            CHECK(tests.count(part) == 1);
            named.insert(part);
        }
    }
    CHECK(rows > 100);
    for (const std::string& name : reproducers) {
        INFO("a reproducer without a row in docs/bad_inputs.md: " << name);
        CHECK(named.count(name) == 1);
    }
}
