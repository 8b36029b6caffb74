#include "widgets/scenario/hf_hub.h"

#include "widgets/export/atomic_write.h"
#include "widgets/state/ledger_view_state.h"

#include "core/io/catalog.h"
#include "core/io/files.h"
#include "core/io/json.h"

#include <QCoreApplication>
#include <QDialogButtonBox>
#include <QDir>
#include <QFileInfo>
#include <QFormLayout>
#include <QHostAddress>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QNetworkRequest>
#include <QProgressBar>
#include <QPushButton>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QTimer>
#include <QVBoxLayout>

namespace kvl::widgets {

namespace {

const QString kDefaultEndpoint = QStringLiteral("https://huggingface.co");

bool isLoopback(const QUrl& url) {
    const QString host = url.host();
    if (host.compare(QLatin1String("localhost"), Qt::CaseInsensitive) == 0)
        return true;
    const QHostAddress a(host);
    return !a.isNull() && a.isLoopback();
}

// https everywhere; http only where nothing leaves the machine.
bool schemeAllowed(const QUrl& url) {
    return url.scheme() == QLatin1String("https") ||
           (url.scheme() == QLatin1String("http") && isLoopback(url));
}

bool sameOrigin(const QUrl& a, const QUrl& b) {
    return a.scheme() == b.scheme() && a.host().compare(b.host(), Qt::CaseInsensitive) == 0 &&
           a.port(a.scheme() == QLatin1String("https") ? 443 : 80) ==
               b.port(b.scheme() == QLatin1String("https") ? 443 : 80);
}

QString readSmallFile(const QString& path) {
    auto text = io::readFile(QFile::encodeName(path).toStdString());
    return text ? QString::fromStdString(*text).trimmed() : QString();
}

QString dateText(const QDateTime& t) {
    return QLocale().toString(t.toLocalTime(), QStringLiteral("yyyy-MM-dd HH:mm"));
}

} // namespace

Result<QUrl> hfEndpoint() {
    QString text = qEnvironmentVariable("HF_ENDPOINT").trimmed();
    if (text.isEmpty())
        text = kDefaultEndpoint;
    while (text.endsWith(QLatin1Char('/')))
        text.chop(1);
    const QUrl url(text, QUrl::StrictMode);
    if (!url.isValid() || url.host().isEmpty() || !schemeAllowed(url) || url.hasQuery() ||
        url.hasFragment())
        return makeError(ErrorCode::BadInput, "HF_ENDPOINT: expected an https:// URL such as " +
                                                  kDefaultEndpoint.toStdString() +
                                                  " (http:// only for 127.0.0.1), got '" +
                                                  text.toStdString() + "'");
    return url;
}

QString hfToken() {
    const QString env = qEnvironmentVariable("HF_TOKEN").trimmed();
    if (!env.isEmpty())
        return env;
    // huggingface_hub/constants.py: HF_TOKEN_PATH, else HF_HOME/token, HF_HOME defaulting to
    // $XDG_CACHE_HOME/huggingface, XDG_CACHE_HOME to ~/.cache.
    QString path = qEnvironmentVariable("HF_TOKEN_PATH");
    if (path.isEmpty()) {
        QString home = qEnvironmentVariable("HF_HOME");
        if (home.isEmpty()) {
            QString xdg = qEnvironmentVariable("XDG_CACHE_HOME");
            if (xdg.isEmpty())
                xdg = QDir::home().filePath(QStringLiteral(".cache"));
            home = QDir(xdg).filePath(QStringLiteral("huggingface"));
        }
        path = QDir(home).filePath(QStringLiteral("token"));
    }
    if (!QFileInfo(path).isFile())
        return {};
    const QString token = readSmallFile(path);
    // A token is one line of printable ASCII; anything else is not one.
    static const QRegularExpression ok(QStringLiteral("^[\\x21-\\x7e]{1,512}$"));
    return ok.match(token).hasMatch() ? token : QString();
}

Status checkRepoId(const QString& repo) {
    static const QRegularExpression part(QStringLiteral("^[A-Za-z0-9_.-]{1,96}$"));
    const QStringList parts = repo.split(QLatin1Char('/'));
    bool ok = !repo.isEmpty() && parts.size() <= 2;
    for (const QString& p : parts) {
        ok = ok && part.match(p).hasMatch() && !p.startsWith(QLatin1Char('-')) &&
             !p.startsWith(QLatin1Char('.')) && !p.endsWith(QLatin1Char('-')) &&
             !p.endsWith(QLatin1Char('.')) && !p.contains(QLatin1String("--")) &&
             !p.contains(QLatin1String(".."));
    }
    if (ok)
        return {};
    return makeError(ErrorCode::BadInput,
                     QStringLiteral("'%1' is not a Hugging Face repo id (expected ORG/NAME, e.g. "
                                    "Qwen/Qwen3-32B)")
                         .arg(repo.left(200))
                         .toStdString());
}

QUrl hfConfigUrl(const QUrl& endpoint, const QString& repo, const QString& revision) {
    QUrl url = endpoint;
    // huggingface_hub's hf_hub_url quotes the revision with no safe characters ("refs/pr/1"
    // becomes "refs%2Fpr%2F1"); the repo id's '/' stays a path separator.
    url.setPath(endpoint.path() + QLatin1Char('/') + repo + QStringLiteral("/resolve/") +
                    QString::fromLatin1(QUrl::toPercentEncoding(revision)) +
                    QStringLiteral("/config.json"),
                QUrl::TolerantMode);
    return url;
}

QString hfCacheFile(const QString& repo, const QString& revision) {
    // The hub cache's own naming ("models--Qwen--Qwen3-32B"), one folder per revision.
    const QString base = QStandardPaths::writableLocation(QStandardPaths::CacheLocation);
    QString name = QStringLiteral("models--") + repo;
    name.replace(QLatin1Char('/'), QStringLiteral("--"));
    return QDir(base).filePath(
        QStringLiteral("huggingface/%1/%2/config.json")
            .arg(name, QString::fromLatin1(QUrl::toPercentEncoding(
                           revision.isEmpty() ? QStringLiteral("main") : revision))));
}

Result<core::ModelSpec> modelFromHubConfig(const QByteArray& json, const QString& repo,
                                           const QString& revision) {
    const std::string source =
        QString(repo + QLatin1Char('@') + revision).toStdString() + "/config.json";
    const std::string_view text(json.constData(), static_cast<std::size_t>(json.size()));
    if (auto doc = io::parseJson(text, source); !doc)
        return makeError(ErrorCode::BadFile, repo.toStdString() + ": the answer is not JSON (" +
                                                 doc.error().message + ")");
    auto parsed = io::parseHfConfig(text, source);
    if (!parsed)
        return makeError(ErrorCode::BadFile, repo.toStdString() + ": not a model config.json (" +
                                                 parsed.error().message + ")");
    core::ModelSpec m = std::move(parsed).value();
    const QString name = repo.section(QLatin1Char('/'), -1);
    m.name = name.toStdString();
    // A lower-case id without '/', so it names files ("qwen--qwen3-32b-memory.png").
    QString id = repo.toLower();
    id.replace(QLatin1Char('/'), QStringLiteral("--"));
    m.id = id.toStdString();
    m.hfRepo = repo.toStdString();
    m.family = "Imported";
    m.notes =
        "From Hugging Face " + repo.toStdString() + " (" + revision.toStdString() + "). " + m.notes;
    return m;
}

HfHubFetcher::HfHubFetcher(QObject* parent)
    : QObject(parent), m_net(new QNetworkAccessManager(this)) {
    qRegisterMetaType<HfFetchResult>();
}

HfHubFetcher::~HfHubFetcher() {
    if (m_reply) {
        m_cancelled = true;
        m_reply->disconnect(this);
        m_reply->abort();
    }
}

bool HfHubFetcher::fetch(const QString& repo, const QString& revision) {
    auto refuse = [this](HfFetchResult r) {
        QMetaObject::invokeMethod(
            this, [this, r] { emit finished(r); }, Qt::QueuedConnection);
        return false;
    };
    HfFetchResult r;
    r.repo = repo.trimmed();
    r.revision = revision.trimmed().isEmpty() ? QStringLiteral("main") : revision.trimmed();
    if (m_reply) {
        r.message = tr("A Hugging Face download is already going");
        return refuse(r);
    }
    if (auto ok = checkRepoId(r.repo); !ok) {
        r.message = qs(ok.error().message);
        return refuse(r);
    }
    auto endpoint = hfEndpoint();
    if (!endpoint) {
        r.message = qs(endpoint.error().message);
        return refuse(r);
    }
    m_endpoint = *endpoint;
    m_repo = r.repo;
    m_revision = r.revision;
    m_token = hfToken();
    m_redirects = 0;
    m_cancelled = false;
    start(hfConfigUrl(m_endpoint, m_repo, m_revision));
    return true;
}

void HfHubFetcher::start(const QUrl& url) {
    m_tooLarge = false;
    QNetworkRequest request(url);
    // Redirects are followed here, not by Qt: the token goes to the endpoint only, never to the
    // CDN a 302 points at (what python-requests' rebuild_auth does for huggingface_hub).
    request.setAttribute(QNetworkRequest::RedirectPolicyAttribute,
                         QNetworkRequest::ManualRedirectPolicy);
    request.setHeader(QNetworkRequest::UserAgentHeader,
                      QStringLiteral("kvledger/%1").arg(QCoreApplication::applicationVersion()));
    if (!m_token.isEmpty() && sameOrigin(url, m_endpoint))
        request.setRawHeader("Authorization", "Bearer " + m_token.toUtf8());
    QNetworkReply* reply = m_net->get(request);
    m_reply = reply;
    auto* timer = new QTimer(reply);
    timer->setSingleShot(true);
    timer->setInterval(m_timeoutMs);
    connect(timer, &QTimer::timeout, reply, [reply] {
        reply->setProperty("kvlTimedOut", true);
        reply->abort();
    });
    timer->start();
    connect(reply, &QNetworkReply::metaDataChanged, reply, [this, reply, timer] {
        timer->start();
        const QVariant length = reply->header(QNetworkRequest::ContentLengthHeader);
        if (length.isValid() && length.toLongLong() > kMaxBytes) {
            m_tooLarge = true;
            reply->abort();
        }
    });
    connect(reply, &QNetworkReply::downloadProgress, this,
            [this, reply, timer](qint64 received, qint64 total) {
                timer->start();
                if (received > kMaxBytes) {
                    m_tooLarge = true;
                    reply->abort();
                    return;
                }
                emit progress(received, total);
            });
    connect(reply, &QNetworkReply::finished, this, &HfHubFetcher::onFinished);
}

bool HfHubFetcher::isRunning() const {
    return !m_reply.isNull();
}

void HfHubFetcher::cancel() {
    if (!m_reply)
        return;
    m_cancelled = true;
    m_reply->abort(); // finished() follows (synchronously)
}

void HfHubFetcher::finish(HfFetchResult result) {
    result.repo = m_repo;
    result.revision = m_revision;
    emit finished(result);
}

void HfHubFetcher::fail(const QString& message, int status, bool offline) {
    HfFetchResult r;
    r.httpStatus = status;
    r.message = message;
    if (offline) {
        // The network failed, not the repository: a copy from an earlier fetch will do.
        const QString cached = hfCacheFile(m_repo, m_revision);
        if (QFileInfo(cached).isFile()) {
            auto text = io::readFile(QFile::encodeName(cached).toStdString());
            if (text) {
                const QByteArray json = QByteArray::fromStdString(*text);
                auto model = modelFromHubConfig(json, m_repo, m_revision);
                if (model) {
                    r.ok = true;
                    r.fromCache = true;
                    r.json = json;
                    r.model = std::move(model).value();
                    r.cachedAt = QFileInfo(cached).lastModified();
                    r.message = tr("%1: offline, using the cached copy from %2 (%3)")
                                    .arg(m_repo, dateText(r.cachedAt), message);
                }
            }
        }
    }
    finish(r);
}

void HfHubFetcher::onFinished() {
    QNetworkReply* reply = m_reply;
    if (!reply || reply != sender())
        return;
    m_reply = nullptr;
    reply->deleteLater();
    const int status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
    const QString host = reply->url().host();
    if (m_cancelled) {
        HfFetchResult r;
        r.cancelled = true;
        r.message = tr("Cancelled the download of %1").arg(m_repo);
        finish(r);
        return;
    }
    if (m_tooLarge)
        return fail(tr("%1: %2 answered more than %3 MiB, which is no config.json")
                        .arg(m_repo, host)
                        .arg(kMaxBytes >> 20),
                    status, false);
    if (reply->property("kvlTimedOut").toBool())
        return fail(tr("%1 did not answer within %2 s").arg(host).arg(m_timeoutMs / 1000.0), 0,
                    true);
    if (status >= 300 && status < 400) {
        QUrl target = reply->attribute(QNetworkRequest::RedirectionTargetAttribute).toUrl();
        if (target.isEmpty())
            target = QUrl(QString::fromLatin1(reply->rawHeader("Location")));
        target = reply->url().resolved(target);
        if (target.isEmpty() || !target.isValid())
            return fail(tr("%1: %2 redirected (HTTP %3) without a valid Location")
                            .arg(m_repo, host)
                            .arg(status),
                        status, false);
        if (++m_redirects > kMaxRedirects)
            return fail(tr("%1: more than %2 redirects").arg(m_repo).arg(kMaxRedirects), status,
                        false);
        if (!schemeAllowed(target))
            return fail(tr("%1: refused a redirect to %2 (https only)")
                            .arg(m_repo, target.toDisplayString()),
                        status, false);
        start(target);
        return;
    }
    if (status == 0)
        return fail(tr("could not reach %1: %2").arg(host, reply->errorString()), 0, true);
    if (status == 401 || status == 403)
        return fail(
            m_token.isEmpty()
                ? tr("%1 is gated or private (HTTP %2): accept its licence on huggingface.co and "
                     "set HF_TOKEN or run `huggingface-cli login`")
                      .arg(m_repo)
                      .arg(status)
                : tr("%1 is gated or private and the token was refused (HTTP %2): accept its "
                     "licence on huggingface.co with the token's account, or set another "
                     "HF_TOKEN")
                      .arg(m_repo)
                      .arg(status),
            status, false);
    if (status == 404)
        return fail(tr("%1 has no config.json at revision %2 (HTTP 404): check the repo id and "
                       "the revision")
                        .arg(m_repo, m_revision),
                    status, false);
    if (status != 200)
        return fail(
            tr("%1: %2 answered HTTP %3 %4")
                .arg(m_repo, host)
                .arg(status)
                .arg(reply->attribute(QNetworkRequest::HttpReasonPhraseAttribute).toString()),
            status, status >= 500);
    const QByteArray body = reply->readAll();
    auto model = modelFromHubConfig(body, m_repo, m_revision);
    if (!model)
        return fail(qs(model.error().message), status, false);
    HfFetchResult r;
    r.ok = true;
    r.httpStatus = status;
    r.json = body;
    r.model = std::move(model).value();
    const QString cached = hfCacheFile(m_repo, m_revision);
    QDir().mkpath(QFileInfo(cached).absolutePath());
    if (auto saved = writeFileAtomically(cached, body); !saved)
        r.message = tr("%1 opened; not cached: %2").arg(m_repo, qs(saved.error().message));
    finish(r);
}

HfHubDialog::HfHubDialog(QWidget* parent) : QDialog(parent), m_fetcher(new HfHubFetcher(this)) {
    setWindowTitle(tr("Open from Hugging Face"));
    auto* layout = new QVBoxLayout(this);
    auto* form = new QFormLayout;
    m_repo = new QLineEdit(this);
    m_repo->setObjectName(QStringLiteral("hubRepoEdit"));
    m_repo->setPlaceholderText(QStringLiteral("Qwen/Qwen3-32B"));
    m_repo->setToolTip(tr("A model repository on the Hub (ORG/NAME); its config.json is read"));
    m_revision = new QLineEdit(QStringLiteral("main"), this);
    m_revision->setObjectName(QStringLiteral("hubRevisionEdit"));
    m_revision->setToolTip(tr("A branch, tag or commit (vllm serve --revision)"));
    form->addRow(tr("Repository"), m_repo);
    form->addRow(tr("Revision"), m_revision);
    layout->addLayout(form);
    auto* where = new QLabel(this);
    where->setWordWrap(true);
    const auto endpoint = hfEndpoint();
    where->setText(endpoint
                       ? tr("From %1%2. Gated models need HF_TOKEN or `huggingface-cli login`.")
                             .arg(endpoint->toDisplayString(),
                                  hfToken().isEmpty() ? QString() : tr(" with your token"))
                       : qs(endpoint.error().message));
    layout->addWidget(where);
    m_progress = new QProgressBar(this);
    m_progress->setObjectName(QStringLiteral("hubProgress"));
    m_progress->setVisible(false);
    layout->addWidget(m_progress);
    m_status = new QLabel(this);
    m_status->setObjectName(QStringLiteral("hubStatus"));
    m_status->setWordWrap(true);
    m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(m_status);
    auto* buttons = new QDialogButtonBox(this);
    m_open = buttons->addButton(tr("&Open"), QDialogButtonBox::AcceptRole);
    m_open->setDefault(true);
    m_cancel = buttons->addButton(QDialogButtonBox::Cancel);
    layout->addWidget(buttons);
    connect(m_open, &QPushButton::clicked, this, &HfHubDialog::startFetch);
    connect(m_cancel, &QPushButton::clicked, this, [this] {
        if (m_fetcher->isRunning())
            m_fetcher->cancel();
        else
            reject();
    });
    connect(m_fetcher, &HfHubFetcher::progress, this, [this](qint64 received, qint64 total) {
        m_progress->setRange(0, total > 0 ? 1000 : 0);
        if (total > 0)
            m_progress->setValue(int(1000 * received / total));
    });
    connect(m_fetcher, &HfHubFetcher::finished, this, &HfHubDialog::onFinished);
    resize(460, sizeHint().height());
}

QString HfHubDialog::statusText() const {
    return m_status->text();
}

void HfHubDialog::startFetch() {
    if (m_fetcher->isRunning())
        return;
    m_status->setText(tr("Fetching config.json of %1...").arg(m_repo->text().trimmed()));
    m_progress->setRange(0, 0); // busy until the size is known
    m_progress->setVisible(true);
    m_open->setEnabled(false);
    m_fetcher->fetch(m_repo->text(), m_revision->text());
}

void HfHubDialog::onFinished(const HfFetchResult& result) {
    m_progress->setVisible(false);
    m_open->setEnabled(true);
    m_result = result;
    if (result.ok) {
        accept();
        return;
    }
    m_status->setText(result.message);
}

} // namespace kvl::widgets
