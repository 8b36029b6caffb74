// Open from Hugging Face against a real HTTP server on 127.0.0.1 (a QTcpServer in the test,
// reached through HF_ENDPOINT): 200, gated 401/403 with and without a token, 404, a server
// error, redirects (relative, and to another origin that must not see the token), a slow
// answer cancelled or timed out, an answer too large, not JSON, not a model config, and the
// cached copy used once the server is gone. Then the window's File > Open from Hugging Face.

#include "main_window.h"

#include "widgets/scenario/hf_hub.h"
#include "widgets/scenario/model_picker.h"
#include "widgets/scenario/scenario_panel.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QHostAddress>
#include <QLineEdit>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTcpServer>
#include <QTcpSocket>
#include <QTemporaryDir>
#include <QTest>

#include <map>
#include <memory>

using namespace kvl;
using widgets::HfFetchResult;
using widgets::HfHubFetcher;

namespace {

const QByteArray kConfig =
    R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 2048,
        "num_attention_heads": 16, "num_key_value_heads": 4, "num_hidden_layers": 20,
        "max_position_embeddings": 4096, "torch_dtype": "bfloat16", "vocab_size": 32000,
        "intermediate_size": 5632})";

struct Route {
    int status = 200;
    QByteArray body;
    QList<QPair<QByteArray, QByteArray>> headers;
    bool hang = false;         // read the request, never answer
    QByteArray requiredAuth;   // non-empty: 401 unless Authorization equals it
    qint64 claimedLength = -1; // a Content-Length other than the body's
};

Route reply(int status, QByteArray body, QList<QPair<QByteArray, QByteArray>> headers = {}) {
    Route r;
    r.status = status;
    r.body = std::move(body);
    r.headers = std::move(headers);
    return r;
}

struct SeenRequest {
    QByteArray path;
    QByteArray authorization;
};

// A minimal HTTP/1.1 server: one request per connection, answered from the route table and
// closed. Written here because Qt has no HTTP server module on Debian 12's Qt 6.4.
class TestServer : public QObject {
    Q_OBJECT
public:
    TestServer() { connect(&m_server, &QTcpServer::newConnection, this, &TestServer::accept); }
    bool listen() { return m_server.listen(QHostAddress::LocalHost, 0); }
    void close() {
        m_server.close();
        for (auto& s : m_sockets)
            if (s)
                s->abort();
    }
    QString origin() const {
        return QStringLiteral("http://127.0.0.1:%1").arg(m_server.serverPort());
    }
    std::map<QByteArray, Route> routes;
    QList<SeenRequest> seen;

private:
    void accept() {
        while (QTcpSocket* s = m_server.nextPendingConnection()) {
            m_sockets << s;
            connect(s, &QTcpSocket::readyRead, this, [this, s] { read(s); });
            connect(s, &QTcpSocket::disconnected, s, &QObject::deleteLater);
        }
    }
    void read(QTcpSocket* s) {
        QByteArray& buf = m_buffers[s];
        buf += s->readAll();
        const int end = int(buf.indexOf("\r\n\r\n"));
        if (end < 0)
            return;
        const QList<QByteArray> lines = buf.left(end).split('\n');
        buf.clear();
        const QList<QByteArray> request = lines.value(0).trimmed().split(' ');
        SeenRequest r;
        r.path = request.value(1);
        for (const QByteArray& l : lines.mid(1)) {
            const int colon = int(l.indexOf(':'));
            if (colon > 0 && l.left(colon).trimmed().toLower() == "authorization")
                r.authorization = l.mid(colon + 1).trimmed();
        }
        seen << r;
        const auto it = routes.find(r.path);
        Route route = it != routes.end() ? it->second : reply(404, "Entry not found");
        if (route.hang)
            return;
        if (!route.requiredAuth.isEmpty() && r.authorization != route.requiredAuth) {
            route.status = 401;
            route.body = "Access to model is restricted";
        }
        QByteArray out = "HTTP/1.1 " + QByteArray::number(route.status) + " Status\r\n";
        for (const auto& [k, v] : route.headers)
            out += k + ": " + v + "\r\n";
        out +=
            "Content-Type: application/json\r\nConnection: close\r\nContent-Length: " +
            QByteArray::number(route.claimedLength >= 0 ? route.claimedLength : route.body.size()) +
            "\r\n\r\n";
        if (route.claimedLength < 0)
            out += route.body;
        s->write(out);
        if (route.claimedLength < 0)
            s->disconnectFromHost();
    }
    QTcpServer m_server;
    QList<QPointer<QTcpSocket>> m_sockets;
    std::map<QTcpSocket*, QByteArray> m_buffers;
};

QByteArray path(const char* repo, const char* revision = "main") {
    return QByteArray("/") + repo + "/resolve/" + revision + "/config.json";
}

} // namespace

class TestHfHub : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void init();
    void cleanup();

    void answers_data();
    void answers();
    void tokenFromEnvironmentOrFile();
    void redirectToAnotherOriginDropsTheToken();
    void slowAnswerCancelled();
    void slowAnswerTimesOut();
    void cacheHitWithServerGone();
    void badEndpointAndRepoId_data();
    void badEndpointAndRepoId();
    void revisionIsQuoted();
    void windowOpensFromHub();
    void dialogShowsProgressAndErrors();

private:
    HfFetchResult fetch(HfHubFetcher& f, const QString& repo, const QString& rev = "main");
    std::unique_ptr<TestServer> m_server;
    QTemporaryDir m_home;
};

void TestHfHub::initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QVERIFY(m_home.isValid());
    // Nothing from the machine's own Hub login or proxies.
    for (const char* v : {"HF_TOKEN", "HF_TOKEN_PATH", "http_proxy", "https_proxy", "HTTP_PROXY",
                          "HTTPS_PROXY", "all_proxy", "ALL_PROXY"})
        qunsetenv(v);
    qputenv("HF_HOME", m_home.path().toUtf8());
}

void TestHfHub::init() {
    QDir(QStandardPaths::writableLocation(QStandardPaths::CacheLocation) +
         QStringLiteral("/huggingface"))
        .removeRecursively();
    m_server = std::make_unique<TestServer>();
    QVERIFY(m_server->listen());
    qputenv("HF_ENDPOINT", m_server->origin().toUtf8());
    qunsetenv("HF_TOKEN");
}

void TestHfHub::cleanup() {
    m_server.reset();
    qunsetenv("HF_TOKEN");
}

HfFetchResult TestHfHub::fetch(HfHubFetcher& f, const QString& repo, const QString& rev) {
    QSignalSpy done(&f, &HfHubFetcher::finished);
    f.fetch(repo, rev);
    if (!done.wait(10000))
        return {};
    return done.at(0).at(0).value<HfFetchResult>();
}

void TestHfHub::answers_data() {
    QTest::addColumn<QString>("repo");
    QTest::addColumn<QByteArray>("token");
    QTest::addColumn<bool>("ok");
    QTest::addColumn<int>("status");
    QTest::addColumn<QString>("message");
    QTest::addRow("200") << "Org/Model" << QByteArray() << true << 200 << QString();
    QTest::addRow("200 gated, with the token")
        << "Gated/Model" << QByteArray("secret") << true << 200 << QString();
    QTest::addRow("401 gated, no token")
        << "Gated/Model" << QByteArray() << false << 401
        << "Gated/Model is gated or private (HTTP 401): accept its licence on huggingface.co and "
           "set HF_TOKEN or run `huggingface-cli login`";
    QTest::addRow("401 gated, wrong token") << "Gated/Model" << QByteArray("wrong") << false << 401
                                            << "the token was refused (HTTP 401)";
    QTest::addRow("403") << "Forbidden/Model" << QByteArray() << false << 403
                         << "is gated or private (HTTP 403)";
    QTest::addRow("404") << "No/Such" << QByteArray() << false << 404
                         << "No/Such has no config.json at revision main (HTTP 404)";
    QTest::addRow("500") << "Broken/Model" << QByteArray() << false << 500 << "answered HTTP 500";
    QTest::addRow("not JSON") << "Html/Page" << QByteArray() << false << 200
                              << "Html/Page: the answer is not JSON";
    QTest::addRow("not a model config") << "Tokenizer/Only" << QByteArray() << false << 200
                                        << "Tokenizer/Only: not a model config.json";
    QTest::addRow("too large") << "Huge/Model" << QByteArray() << false << 200
                               << "answered more than 4 MiB";
    QTest::addRow("relative redirect (renamed repo)")
        << "Old/Name" << QByteArray() << true << 200 << QString();
}

void TestHfHub::answers() {
    QFETCH(QString, repo);
    QFETCH(QByteArray, token);
    QFETCH(bool, ok);
    QFETCH(int, status);
    QFETCH(QString, message);
    auto& routes = m_server->routes;
    routes[path("Org/Model")] = reply(200, kConfig);
    routes[path("Gated/Model")] = reply(200, kConfig);
    routes[path("Gated/Model")].requiredAuth = "Bearer secret";
    routes[path("Forbidden/Model")] = reply(403, "forbidden");
    routes[path("Broken/Model")] = reply(500, "oops");
    routes[path("Html/Page")] = reply(200, "<html>hello</html>");
    routes[path("Tokenizer/Only")] = reply(200, R"({"model_max_length": 4096})");
    routes[path("Huge/Model")] = reply(200, {});
    routes[path("Huge/Model")].claimedLength = 5 << 20;
    routes[path("Old/Name")] = reply(307, {}, {{"Location", "/New/Name/resolve/main/config.json"}});
    routes[path("New/Name")] = reply(200, kConfig);
    if (!token.isEmpty())
        qputenv("HF_TOKEN", token);

    HfHubFetcher f;
    const HfFetchResult r = fetch(f, repo);
    QCOMPARE(r.ok, ok);
    QCOMPARE(r.httpStatus, status);
    QCOMPARE(r.repo, repo);
    QCOMPARE(r.revision, QStringLiteral("main"));
    QVERIFY2(r.message.contains(message), qPrintable(r.message));
    QCOMPARE(r.message.count(QLatin1Char('\n')), 0); // one line
    QVERIFY(!f.isRunning());
    // The token goes to the endpoint as a bearer token, and only when there is one.
    QVERIFY(!m_server->seen.isEmpty());
    QCOMPARE(m_server->seen.first().authorization,
             token.isEmpty() ? QByteArray() : QByteArray("Bearer ") + token);
    const QString cached = widgets::hfCacheFile(repo, QStringLiteral("main"));
    QCOMPARE(QFileInfo::exists(cached), ok);
    if (!ok)
        return;
    QCOMPARE(r.model.numLayers(), 20);
    QCOMPARE(r.model.qHeads, 16);
    QCOMPARE(r.model.kvHeads, 4);
    QCOMPARE(r.model.headDim, 128);
    QCOMPARE(QString::fromStdString(r.model.hfRepo), repo); // vllm serve takes the repo id
    QCOMPARE(QString::fromStdString(r.model.name), repo.section(QLatin1Char('/'), 1));
    QCOMPARE(QString::fromStdString(r.model.id), repo.toLower().replace(QLatin1Char('/'), "--"));
    QVERIFY(!r.fromCache);
    QFile f2(cached);
    QVERIFY(f2.open(QIODevice::ReadOnly));
    QCOMPARE(f2.readAll(), kConfig);
}

void TestHfHub::tokenFromEnvironmentOrFile() {
    QCOMPARE(widgets::hfToken(), QString());
    QFile file(m_home.filePath(QStringLiteral("token")));
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write("hf_fromfile\n");
    file.close();
    QCOMPARE(widgets::hfToken(), QStringLiteral("hf_fromfile")); // $HF_HOME/token
    qputenv("HF_TOKEN", "hf_fromenv");
    QCOMPARE(widgets::hfToken(), QStringLiteral("hf_fromenv")); // HF_TOKEN wins
    qunsetenv("HF_TOKEN");
    const QString other = m_home.filePath(QStringLiteral("other-token"));
    QFile f2(other);
    QVERIFY(f2.open(QIODevice::WriteOnly));
    f2.write("hf_path");
    f2.close();
    qputenv("HF_TOKEN_PATH", other.toUtf8());
    QCOMPARE(widgets::hfToken(), QStringLiteral("hf_path"));
    qunsetenv("HF_TOKEN_PATH");
    QVERIFY(QFile::remove(m_home.filePath(QStringLiteral("token"))));
    QCOMPARE(widgets::hfToken(), QString());
}

void TestHfHub::redirectToAnotherOriginDropsTheToken() {
    TestServer cdn;
    QVERIFY(cdn.listen());
    cdn.routes["/blob/config.json"] = reply(200, kConfig);
    m_server->routes[path("Org/Model")] = reply(
        302, {}, {{"Location", (cdn.origin() + QStringLiteral("/blob/config.json")).toUtf8()}});
    qputenv("HF_TOKEN", "secret");
    HfHubFetcher f;
    const HfFetchResult r = fetch(f, QStringLiteral("Org/Model"));
    QVERIFY2(r.ok, qPrintable(r.message));
    QCOMPARE(m_server->seen.size(), 1);
    QCOMPARE(m_server->seen.first().authorization, QByteArray("Bearer secret"));
    QCOMPARE(cdn.seen.size(), 1);
    QCOMPARE(cdn.seen.first().authorization, QByteArray()); // the CDN never sees the token
    QCOMPARE(r.model.kvHeads, 4);
}

void TestHfHub::slowAnswerCancelled() {
    m_server->routes[path("Slow/Model")].hang = true;
    HfHubFetcher f;
    QSignalSpy done(&f, &HfHubFetcher::finished);
    QVERIFY(f.fetch(QStringLiteral("Slow/Model")));
    QVERIFY(f.isRunning());
    QTRY_COMPARE(m_server->seen.size(), 1); // the request is at the server, unanswered
    QElapsedTimer t;
    t.start();
    f.cancel();
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, 1000);
    QVERIFY(t.elapsed() < 1000);
    const auto r = done.at(0).at(0).value<HfFetchResult>();
    QVERIFY(r.cancelled);
    QVERIFY(!r.ok);
    QVERIFY(!f.isRunning());
    QVERIFY(!QFileInfo::exists(widgets::hfCacheFile(QStringLiteral("Slow/Model"), "main")));
}

void TestHfHub::slowAnswerTimesOut() {
    m_server->routes[path("Slow/Model")].hang = true;
    HfHubFetcher f;
    f.setTimeoutMs(300);
    const HfFetchResult r = fetch(f, QStringLiteral("Slow/Model"));
    QVERIFY(!r.ok);
    QVERIFY(!r.cancelled);
    QCOMPARE(r.httpStatus, 0);
    QVERIFY2(r.message.contains(QStringLiteral("127.0.0.1 did not answer within 0.3 s")),
             qPrintable(r.message));
}

void TestHfHub::cacheHitWithServerGone() {
    m_server->routes[path("Org/Model")] = reply(200, kConfig);
    HfHubFetcher f;
    const HfFetchResult first = fetch(f, QStringLiteral("Org/Model"));
    QVERIFY2(first.ok, qPrintable(first.message));
    QVERIFY(!first.fromCache);
    m_server->close(); // offline now: the connection is refused
    const HfFetchResult second = fetch(f, QStringLiteral("Org/Model"));
    QVERIFY2(second.ok, qPrintable(second.message));
    QVERIFY(second.fromCache);
    QVERIFY(second.cachedAt.isValid());
    QVERIFY(second.cachedAt.secsTo(QDateTime::currentDateTime()) < 120);
    QVERIFY2(second.message.startsWith(
                 QStringLiteral("Org/Model: offline, using the cached copy from %1")
                     .arg(second.cachedAt.toString(QStringLiteral("yyyy-MM-dd")))),
             qPrintable(second.message));
    QCOMPARE(second.model.kvHeads, 4);
    QCOMPARE(second.model.hfRepo, std::string("Org/Model"));
    // Another revision was never fetched: offline and nothing cached is an error.
    const HfFetchResult other = fetch(f, QStringLiteral("Org/Model"), QStringLiteral("v2"));
    QVERIFY(!other.ok);
    QVERIFY2(other.message.startsWith(QStringLiteral("could not reach 127.0.0.1")),
             qPrintable(other.message));
}

void TestHfHub::badEndpointAndRepoId_data() {
    QTest::addColumn<QString>("endpoint");
    QTest::addColumn<QString>("repo");
    QTest::addColumn<QString>("message");
    QTest::addRow("plain http off the machine")
        << "http://example.com"
        << "Org/Model"
        << "HF_ENDPOINT: expected an https:// URL such as https://huggingface.co (http:// only "
           "for 127.0.0.1), got 'http://example.com'";
    QTest::addRow("not a URL") << "huggingface.co"
                               << "Org/Model"
                               << "HF_ENDPOINT";
    QTest::addRow("three parts") << QString() << "a/b/c"
                                 << "'a/b/c' is not a Hugging Face repo id";
    QTest::addRow("double dash") << QString() << "Org/--x"
                                 << "not a Hugging Face repo id";
    QTest::addRow("path traversal") << QString() << "../etc"
                                    << "not a Hugging Face repo id";
    QTest::addRow("empty") << QString() << ""
                           << "not a Hugging Face repo id";
}

void TestHfHub::badEndpointAndRepoId() {
    QFETCH(QString, endpoint);
    QFETCH(QString, repo);
    QFETCH(QString, message);
    if (!endpoint.isEmpty())
        qputenv("HF_ENDPOINT", endpoint.toUtf8());
    HfHubFetcher f;
    QSignalSpy done(&f, &HfHubFetcher::finished);
    QVERIFY(!f.fetch(repo));
    QVERIFY(done.wait(1000)); // the answer is queued, never synchronous
    const auto r = done.at(0).at(0).value<HfFetchResult>();
    QVERIFY(!r.ok);
    QVERIFY2(r.message.contains(message), qPrintable(r.message));
    QVERIFY(m_server->seen.isEmpty()); // nothing was sent
}

void TestHfHub::revisionIsQuoted() {
    const QUrl url =
        widgets::hfConfigUrl(QUrl(QStringLiteral("https://huggingface.co")),
                             QStringLiteral("Qwen/Qwen3-32B"), QStringLiteral("refs/pr/1"));
    QCOMPARE(url.toString(QUrl::FullyEncoded),
             QStringLiteral("https://huggingface.co/Qwen/Qwen3-32B/resolve/refs%2Fpr%2F1/"
                            "config.json"));
    QCOMPARE(widgets::hfEndpoint().value().toString(), m_server->origin());
    qunsetenv("HF_ENDPOINT");
    QCOMPARE(widgets::hfEndpoint().value().toString(), QStringLiteral("https://huggingface.co"));
}

void TestHfHub::windowOpensFromHub() {
    m_server->routes[path("Org/Model")] = reply(200, kConfig);
    app::MainWindow::Options o;
    o.useSettings = false;
    o.showDialogs = false;
    app::MainWindow w(o);
    w.panel()->modelPicker()->searchField()->setText(QStringLiteral("llama 70"));
    QSignalSpy opened(&w, &app::MainWindow::hubOpened);
    w.openFromHub(QStringLiteral("Org/Model"));
    QVERIFY(opened.wait(10000));
    QVERIFY2(opened.at(0).at(0).toBool(), qPrintable(opened.at(0).at(1).toString()));
    const core::ModelSpec& m = w.scenario().model;
    QCOMPARE(m.hfRepo, std::string("Org/Model"));
    QCOMPARE(m.kvHeads, 4);
    QCOMPARE(w.panel()->modelPicker()->currentId(), QStringLiteral("org--model"));
    QVERIFY(w.panel()->modelPicker()->searchField()->text().isEmpty()); // cleared on import
    QVERIFY2(w.vllmCommandText().startsWith(QStringLiteral("vllm serve Org/Model")),
             qPrintable(w.vllmCommandText()));
    // A failure leaves the scenario as it was and says why in one line.
    const std::string before = w.scenario().model.id;
    QSignalSpy errors(&w, &app::MainWindow::errorRaised);
    w.openFromHub(QStringLiteral("No/Such"));
    QVERIFY(opened.wait(10000));
    QVERIFY(!opened.at(1).at(0).toBool());
    QCOMPARE(errors.count(), 1);
    QVERIFY(errors.at(0).at(1).toString().contains(QStringLiteral("HTTP 404")));
    QCOMPARE(w.scenario().model.id, before);
}

void TestHfHub::dialogShowsProgressAndErrors() {
    m_server->routes[path("Org/Model")] = reply(200, kConfig);
    widgets::HfHubDialog dialog;
    QCOMPARE(dialog.revisionEdit()->text(), QStringLiteral("main"));
    dialog.show();
    QSignalSpy done(dialog.fetcher(), &HfHubFetcher::finished);
    dialog.repoEdit()->setText(QStringLiteral("No/Such"));
    dialog.startFetch();
    QVERIFY(dialog.findChild<QWidget*>(QStringLiteral("hubProgress"))->isVisible());
    QVERIFY(done.wait(10000));
    QVERIFY(dialog.isVisible()); // an error keeps the dialog open, with the one line
    QVERIFY2(dialog.statusText().contains(QStringLiteral("No/Such has no config.json")),
             qPrintable(dialog.statusText()));
    QVERIFY(!dialog.findChild<QWidget*>(QStringLiteral("hubProgress"))->isVisible());
    dialog.repoEdit()->setText(QStringLiteral("Org/Model"));
    dialog.startFetch();
    QVERIFY(done.wait(10000));
    QCOMPARE(dialog.result(), int(QDialog::Accepted));
    QVERIFY(dialog.fetchResult().ok);
    QCOMPARE(dialog.fetchResult().model.hfRepo, std::string("Org/Model"));
}

QTEST_MAIN(TestHfHub)
#include "tst_hf_hub.moc"
