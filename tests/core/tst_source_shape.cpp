// The rule "no function over 120 lines outside tests and kernels": every function body (and
// lambda body) in app/, widgets/, core/ and gpu_probe/ spans at most kMaxLines lines, from the
// line of its opening brace to the line of its closing one. A long function is split into
// named steps; this test keeps a new one from growing back.
//
// The scan is lexical, not a C++ parser: it skips comments, string and character literals
// (raw strings too), digit separators and preprocessor lines, then classifies each brace that
// opens outside a function: a function or lambda body follows a closing parenthesis (after
// cv, ref, noexcept, override, final, mutable or a trailing return type), a lambda
// introducer, or a constructor's initialiser list; a namespace, class, struct, enum or a
// brace-initialised table does not. Braces inside a function body belong to that body.

#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QSet>
#include <QTest>

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

namespace {

constexpr int kMaxLines = 120;

// Kernels are exempt: a GPU or SIMD kernel is kept in one piece on purpose (its loop nest,
// registers and unrolling are the unit that is tuned and checked against ptxas' reports).
//  - gpu_probe/cuda/*.cu, *.cuh: the CUDA kernels (and the device code they include);
//  - gpu_probe/cpu/cpu_simd_*.cpp and cpu_simd_kernels.h: the AVX2 / AVX-512 / portable
//    builds of the CPU decode kernel (one source compiled per instruction set);
// The CUDA emulator has no kernel files of its own: emu/emulated_decode.cpp and
// emulated_store.cpp only include cuda/decode_kernels.cuh and store_kernels.cuh to compile the
// same kernel text as host C++ (a file is scanned for what it holds, not what it includes), and
// its runtime (simt.cpp, cuda_emu.h, emulated_backend.cpp) is ordinary code, so all of emu/ is
// scanned.
bool isKernel(const QString& relative) {
    if (relative.startsWith(QLatin1String("gpu_probe/cuda/")) &&
        (relative.endsWith(QLatin1String(".cu")) || relative.endsWith(QLatin1String(".cuh"))))
        return true;
    return (relative.startsWith(QLatin1String("gpu_probe/cpu/cpu_simd_")) &&
            relative.endsWith(QLatin1String(".cpp"))) ||
           relative == QLatin1String("gpu_probe/cpu/cpu_simd_kernels.h");
}

struct Body {
    int line = 0;   // of the opening brace, from 1
    int length = 0; // lines from the opening brace's to the closing brace's, inclusive
    std::string name;
};

bool identChar(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

// The source as tokens: identifiers, numbers and punctuation, each with its line; comments,
// literals (as one "\"" or "'" token) and preprocessor lines dropped.
struct Token {
    std::string text;
    int line;
};

std::vector<Token> tokenize(const std::string& s) {
    std::vector<Token> out;
    int line = 1;
    bool lineStart = true; // only whitespace so far on this line
    std::size_t i = 0;
    const std::size_t n = s.size();
    auto skipTo = [&](std::size_t end) { // advances i to `end`, counting lines
        for (; i < end && i < n; ++i)
            line += s[i] == '\n';
    };
    while (i < n) {
        const char c = s[i];
        if (c == '\n') {
            ++line;
            ++i;
            lineStart = true;
            continue;
        }
        if (std::isspace(static_cast<unsigned char>(c))) {
            ++i;
            continue;
        }
        if (c == '#' && lineStart) { // a preprocessor line, with its continuations
            while (i < n && s[i] != '\n') {
                if (s[i] == '\\' && i + 1 < n && s[i + 1] == '\n') {
                    ++line;
                    ++i;
                }
                ++i;
            }
            continue;
        }
        lineStart = false;
        if (c == '/' && i + 1 < n && s[i + 1] == '/') {
            const std::size_t e = s.find('\n', i);
            i = e == std::string::npos ? n : e;
            continue;
        }
        if (c == '/' && i + 1 < n && s[i + 1] == '*') {
            const std::size_t e = s.find("*/", i + 2);
            skipTo(e == std::string::npos ? n : e + 2);
            continue;
        }
        if (c == '"' || c == '\'') { // a literal, with its escapes
            const int at = line;
            ++i;
            while (i < n && s[i] != c) {
                if (s[i] == '\\')
                    ++i;
                if (i < n && s[i] == '\n')
                    ++line;
                ++i;
            }
            ++i;
            out.push_back({std::string(1, c), at});
            continue;
        }
        if (identChar(c)) {
            std::size_t e = i;
            if (std::isdigit(static_cast<unsigned char>(c))) {
                // A number: digits, letters, '.', digit separators and exponent signs.
                while (e < n && (identChar(s[e]) || s[e] == '.' || s[e] == '\'' ||
                                 ((s[e] == '+' || s[e] == '-') &&
                                  std::string("eEpP").find(s[e - 1]) != std::string::npos)))
                    ++e;
            } else {
                while (e < n && identChar(s[e]))
                    ++e;
            }
            const std::string word = s.substr(i, e - i);
            // A raw string: R"delim( ... )delim", with an encoding prefix or none.
            if (e < n && s[e] == '"' &&
                (word == "R" || word == "u8R" || word == "uR" || word == "UR" || word == "LR")) {
                const std::size_t open = s.find('(', e);
                const std::string close = ")" + s.substr(e + 1, open - e - 1) + "\"";
                const std::size_t end = s.find(close, open);
                const int at = line;
                skipTo(end == std::string::npos ? n : end + close.size());
                out.push_back({"\"", at});
                continue;
            }
            out.push_back({word, line});
            i = e;
            continue;
        }
        // Two-character punctuation the classification needs whole.
        const std::string two = s.substr(i, 2);
        if (two == "::" || two == "->" || two == "&&" || two == "==" || two == "!=" ||
            two == "<=" || two == ">=") {
            out.push_back({two, line});
            i += 2;
            continue;
        }
        out.push_back({std::string(1, c), line});
        ++i;
    }
    return out;
}

// Index of the token that opens the bracket closing at `close` (scanning back), or -1.
int matchBack(const std::vector<std::string>& h, int close, const char* open, const char* shut) {
    int depth = 0;
    for (int k = close; k >= 0; --k) {
        if (h[static_cast<std::size_t>(k)] == shut)
            ++depth;
        else if (h[static_cast<std::size_t>(k)] == open && --depth == 0)
            return k;
    }
    return -1;
}

// The function's name ending just before the parameter list at `params`, with its
// qualifiers: "A::B::f", "operator==", "operator()"; empty when it is not a declarator.
std::string declaratorName(const std::vector<std::string>& h, int params) {
    int k = params - 1;
    std::string got = h[std::size_t(k)];
    if (got == ")" && k >= 2 && h[std::size_t(k - 1)] == "(" &&
        h[std::size_t(k - 2)] == "operator") {
        got = "operator()";
        k -= 2;
    } else if (k >= 1 && h[std::size_t(k - 1)] == "operator") {
        got = "operator" + got;
        --k;
    } else if (!identChar(got.front())) {
        return {}; // "= (a) {" and the like
    }
    while (k >= 2 && h[std::size_t(k - 1)] == "::") {
        got = h[std::size_t(k - 2)] + "::" + got;
        k -= 2;
    }
    return got;
}

// Whether the tokens since the last statement or body (`h`) head a function or lambda body;
// `name` gets the function's name ("Class::f", "lambda").
bool headsFunction(const std::vector<std::string>& h, std::string& name) {
    int last = static_cast<int>(h.size()) - 1;
    if (last < 0)
        return false;
    // A trailing return type: from the "->" after the parameter list's ")".
    for (int k = last; k > 0; --k) {
        if (h[static_cast<std::size_t>(k)] == ")")
            break;
        if (h[static_cast<std::size_t>(k)] == "->") {
            last = k - 1;
            break;
        }
    }
    static const QSet<QString> kAfterParams{"const",   "noexcept", "override", "final",
                                            "mutable", "volatile", "&",        "&&"};
    while (last >= 0 && kAfterParams.contains(QString::fromStdString(h[std::size_t(last)])))
        --last;
    if (last < 0)
        return false;
    const std::string& end = h[static_cast<std::size_t>(last)];
    if (end == "]") {
        name = "lambda";
        return true;
    }
    if (end == "}") {
        // A constructor's initialiser list ending in a braced member: "f(...) : m{x} {".
        for (int k = 1, depth = 0; k < last; ++k) {
            const std::string& t = h[std::size_t(k)];
            depth += t == "(" ? 1 : t == ")" ? -1 : 0;
            if (depth == 0 && t == ":" && h[std::size_t(k - 1)] == ")") {
                const int open = matchBack(h, k - 1, "(", ")");
                name = open > 0 ? declaratorName(h, open) : "";
                return !name.empty();
            }
        }
        return false;
    }
    if (end != ")")
        return false;
    int params = matchBack(h, last, "(", ")");
    if (params <= 0)
        return false;
    const std::string& before = h[std::size_t(params - 1)];
    if (before == "]" || before == "mutable") {
        name = "lambda";
        return true;
    }
    // A constructor's initialiser list ending in a parenthesised member: the parameter list
    // is the one before the first single ':' at depth 0.
    for (int k = 1, depth = 0; k < last; ++k) {
        const std::string& t = h[std::size_t(k)];
        depth += t == "(" ? 1 : t == ")" ? -1 : 0;
        if (depth == 0 && t == ":" && h[std::size_t(k - 1)] == ")") {
            params = matchBack(h, k - 1, "(", ")");
            break;
        }
    }
    if (params <= 0 || h[std::size_t(params - 1)] == "noexcept")
        return false;
    name = declaratorName(h, params);
    return !name.empty();
}

// The function bodies of `source`.
std::vector<Body> functionBodies(const std::string& source) {
    const std::vector<Token> tokens = tokenize(source);
    std::vector<Body> bodies;
    std::vector<std::string> header; // tokens since the last ';', '{' or body '}' here
    // Open braces outside function bodies: true for a brace-initialiser (it stays in the
    // header when it closes), false for a namespace, class or other scope.
    std::vector<bool> open;
    for (std::size_t i = 0; i < tokens.size(); ++i) {
        const std::string& t = tokens[i].text;
        if (t == "{") {
            std::string name;
            if (headsFunction(header, name)) {
                // The body to its matching brace.
                int depth = 0;
                std::size_t j = i;
                for (; j < tokens.size(); ++j) {
                    depth += tokens[j].text == "{" ? 1 : tokens[j].text == "}" ? -1 : 0;
                    if (depth == 0)
                        break;
                }
                const int endLine = j < tokens.size() ? tokens[j].line : tokens.back().line;
                bodies.push_back({tokens[i].line, endLine - tokens[i].line + 1, name});
                i = j;
                header.clear();
                continue;
            }
            const bool init =
                !header.empty() && header.back() != ")" &&
                std::find(header.begin(), header.end(), "namespace") == header.end() &&
                std::find(header.begin(), header.end(), "class") == header.end() &&
                std::find(header.begin(), header.end(), "struct") == header.end() &&
                std::find(header.begin(), header.end(), "enum") == header.end() &&
                std::find(header.begin(), header.end(), "union") == header.end() &&
                header.back() != "\"";
            open.push_back(init);
            if (init)
                header.push_back("{");
            else
                header.clear();
        } else if (t == "}") {
            const bool init = !open.empty() && open.back();
            if (!open.empty())
                open.pop_back();
            if (init)
                header.push_back("}");
            else
                header.clear();
        } else if (t == ";") {
            if (open.empty() || !open.back())
                header.clear();
            else
                header.push_back(t);
        } else if (t == ":" && !header.empty() &&
                   (header.back() == "public" || header.back() == "private" ||
                    header.back() == "protected")) {
            header.clear(); // an access specifier
        } else {
            header.push_back(t);
        }
    }
    return bodies;
}

QString describe(const std::vector<Body>& bodies) {
    QStringList long_;
    for (const Body& b : bodies)
        if (b.length > kMaxLines)
            long_ << QStringLiteral("%1:%2").arg(b.line).arg(b.length);
    return long_.join(QLatin1Char(' '));
}

std::string readFile(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return {};
    return f.readAll().toStdString();
}

// "void f() {" + `bodyLines` lines + "}": a function of bodyLines + 2 lines.
std::string function(const std::string& head, int bodyLines) {
    std::string s = head + " {\n";
    for (int i = 0; i < bodyLines; ++i)
        s += "    ++x;\n";
    return s + "}\n";
}

} // namespace

class TestSourceShape : public QObject {
    Q_OBJECT

private slots:
    // The scan itself, on sources made for it: each row gives the long bodies it must find,
    // as "line:length" (the line of the opening brace).
    void scanner_data() {
        QTest::addColumn<QString>("source");
        QTest::addColumn<QString>("expected");
        auto row = [](const char* name, const std::string& src, const char* expected) {
            QTest::newRow(name) << QString::fromStdString(src) << QString::fromLatin1(expected);
        };
        row("121 lines: flagged", "int x;\n" + function("void f()", 119), "2:121");
        row("120 lines: not flagged", "int x;\n" + function("void f()", 118), "");
        row("a member function", "class A {\n  public:\n" + function("int A::g() const", 130),
            "3:132");
        row("a trailing return type", function("auto f() -> std::vector<int>", 121), "1:123");
        row("a constructor's initialiser list", function("A::A(int v) : m_a(v), m_b{v}", 121),
            "1:123");
        row("a lambda at namespace scope",
            "auto f = [](int a) {\n" + std::string(125, '\n') + "};\n", "1:127");
        row("braces in a string literal",
            function("void f()", 118) + "const char* s = \"}}}{\";\n" + function("void g()", 3),
            "");
        row("a string literal's braces inside a body",
            "void f() {\n  const char* s = \"{{{\";\n" + std::string(130, '\n') + "}\n", "1:133");
        row("braces in comments",
            "// }\n/* { */\n" + function("void f()", 118) + "// {{{\n" + function("void g()", 2),
            "");
        row("a raw string with braces",
            "const char* r = R\"x({ \" })x\";\n" + function("void f()", 122), "2:124");
        row("a char literal and digit separators",
            function("void f()", 50) + "char c = '{';\nint n = 1'000'000;\n" +
                function("void g()", 121),
            "55:123");
        row("a namespace, a class and a struct are not functions",
            "namespace a {\nstruct S {\n" + std::string(200, '\n') + "};\nclass C {\n" +
                std::string(200, '\n') + "};\n}\n",
            "");
        row("an enum and a brace-initialised table are not functions",
            "enum class E {\n" + std::string(150, '\n') + "};\nconst std::vector<int> kT{\n" +
                std::string(150, '\n') + "};\nconst int kU[] = {\n" + std::string(150, '\n') +
                "};\n",
            "");
        row("a table of lambdas: each lambda alone",
            "const std::vector<F> kT = {\n" + function("[](int a)", 10) + ",\n" +
                function("[](int b)", 125) + "};\n",
            "15:127");
    }

    void scanner() {
        QFETCH(QString, source);
        QFETCH(QString, expected);
        QCOMPARE(describe(functionBodies(source.toStdString())), expected);
    }

    // The tree: one row per top-level folder scanned.
    void tree_data() {
        QTest::addColumn<QString>("folder");
        for (const char* f : {"app", "widgets", "core", "gpu_probe"})
            QTest::newRow(f) << QString::fromLatin1(f);
    }

    void tree() {
        QFETCH(QString, folder);
        const QDir root(QStringLiteral(KVL_SOURCE_DIR));
        QVERIFY2(root.exists(folder), qPrintable(folder + " not found under " + root.path()));
        QStringList failures;
        int files = 0;
        QDirIterator it(root.filePath(folder),
                        {QStringLiteral("*.cpp"), QStringLiteral("*.h"), QStringLiteral("*.cu"),
                         QStringLiteral("*.cuh")},
                        QDir::Files, QDirIterator::Subdirectories);
        while (it.hasNext()) {
            const QString path = it.next();
            const QString relative = root.relativeFilePath(path);
            if (isKernel(relative))
                continue;
            ++files;
            for (const Body& b : functionBodies(readFile(path))) {
                if (b.length <= kMaxLines)
                    continue;
                failures << QStringLiteral("%1:%2: %3 is %4 lines (at most %5)")
                                .arg(relative)
                                .arg(b.line)
                                .arg(QString::fromStdString(b.name))
                                .arg(b.length)
                                .arg(kMaxLines);
            }
        }
        QVERIFY2(files > 0, qPrintable("no source under " + folder));
        QVERIFY2(failures.isEmpty(),
                 qPrintable("split these into named steps:\n" + failures.join(QLatin1Char('\n'))));
    }
};

QTEST_APPLESS_MAIN(TestSourceShape)
#include "tst_source_shape.moc"
