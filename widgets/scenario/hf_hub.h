#pragma once
// Open from Hugging Face: fetches a repository's config.json the way huggingface_hub does
// (<endpoint>/<repo>/resolve/<revision>/config.json, HF_ENDPOINT, HF_TOKEN or the token file of
// `huggingface-cli login`), asynchronously with progress and cancel, and keeps a copy per
// repository and revision in the user's cache so the same repository opens offline.

#include "core/model.h"
#include "core/result.h"

#include <QByteArray>
#include <QDateTime>
#include <QDialog>
#include <QObject>
#include <QPointer>
#include <QString>
#include <QUrl>

class QLabel;
class QLineEdit;
class QNetworkAccessManager;
class QNetworkReply;
class QProgressBar;
class QPushButton;

namespace kvl::widgets {

// HF_ENDPOINT (huggingface_hub's mirror variable) or https://huggingface.co, without a
// trailing slash. An endpoint must be https; plain http only on the loopback interface (a
// local mirror or a test server). The error is one line naming HF_ENDPOINT.
Result<QUrl> hfEndpoint();
// HF_TOKEN, else the file of `huggingface-cli login`: HF_TOKEN_PATH, else $HF_HOME/token, else
// ~/.cache/huggingface/token (huggingface_hub constants.py). Empty when there is none.
QString hfToken();
// "Qwen/Qwen3-32B" or "gpt2": one optional namespace, letters, digits, '-', '_' and '.', no
// "--" or "..", at most 96 characters a part (the hub's rules). The error names the repo id.
Status checkRepoId(const QString& repo);
// <endpoint>/<repo>/resolve/<revision>/config.json, the revision percent-encoded.
QUrl hfConfigUrl(const QUrl& endpoint, const QString& repo, const QString& revision);
// Where the cached config.json of a repo and revision lives (under CacheLocation).
QString hfCacheFile(const QString& repo, const QString& revision);
// A config.json's model, as the file import reads it (io::parseHfConfig), named after the
// repository, with hfRepo = repo so `vllm serve` takes the repo id.
Result<core::ModelSpec> modelFromHubConfig(const QByteArray& json, const QString& repo,
                                           const QString& revision);

struct HfFetchResult {
    bool ok = false;
    bool cancelled = false;
    QString repo, revision;
    QByteArray json;       // the config.json
    core::ModelSpec model; // when ok
    bool fromCache = false;
    QDateTime cachedAt; // when fromCache: when the copy was fetched
    int httpStatus = 0; // 0 when the server never answered
    QString message;    // one line: the error, or the offline note
};

class HfHubFetcher : public QObject {
    Q_OBJECT
public:
    explicit HfHubFetcher(QObject* parent = nullptr);
    ~HfHubFetcher() override;

    // Starts fetching; false (and finished() with the error, queued) when a fetch is going or
    // the repo id or endpoint is bad. Never blocks: the answer comes in finished().
    bool fetch(const QString& repo, const QString& revision = QStringLiteral("main"));
    void cancel(); // finished() follows with cancelled = true
    bool isRunning() const;

    // No answer (headers or bytes) for this long ends the fetch as a timeout.
    void setTimeoutMs(int ms) { m_timeoutMs = ms; }
    // A config.json is a few KiB; a larger answer is not one (and is not read on).
    static constexpr qint64 kMaxBytes = 4 << 20;
    static constexpr int kMaxRedirects = 5;

signals:
    void progress(qint64 received, qint64 total); // total -1 when unknown
    void finished(const kvl::widgets::HfFetchResult& result);

private:
    void start(const QUrl& url);
    void onFinished();
    void finish(HfFetchResult result);
    void fail(const QString& message, int status, bool offline);

    QNetworkAccessManager* m_net = nullptr;
    QPointer<QNetworkReply> m_reply;
    QUrl m_endpoint;
    QString m_repo, m_revision, m_token;
    int m_redirects = 0;
    int m_timeoutMs = 30000;
    bool m_cancelled = false;
    bool m_tooLarge = false;
};

// File > Open from Hugging Face...: a repo id and a revision, Open, progress, Cancel, and the
// one-line answer. accepted() comes with fetchResult() ok.
class HfHubDialog : public QDialog {
    Q_OBJECT
public:
    explicit HfHubDialog(QWidget* parent = nullptr);

    HfHubFetcher* fetcher() const { return m_fetcher; }
    const HfFetchResult& fetchResult() const { return m_result; }
    QLineEdit* repoEdit() const { return m_repo; }
    QLineEdit* revisionEdit() const { return m_revision; }
    QString statusText() const;
    void startFetch(); // what the Open button does

private:
    void onFinished(const HfFetchResult& result);

    HfHubFetcher* m_fetcher = nullptr;
    QLineEdit* m_repo = nullptr;
    QLineEdit* m_revision = nullptr;
    QProgressBar* m_progress = nullptr;
    QLabel* m_status = nullptr;
    QPushButton* m_open = nullptr;
    QPushButton* m_cancel = nullptr;
    HfFetchResult m_result;
};

} // namespace kvl::widgets

Q_DECLARE_METATYPE(kvl::widgets::HfFetchResult)
