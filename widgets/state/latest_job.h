#pragma once
// A worker-thread job of a tab that re-runs on every edit (Deployment, Traffic): only the
// latest request's answer is shown. Each start bumps the tab's generation; an answer that
// arrives for an older generation is stale and only counted.

#include <QFuture>
#include <QFutureWatcher>
#include <QObject>

#include <utility>

namespace kvl::widgets {

// When `future` finishes, on `context`'s thread: `done(result)` if `*current` still equals
// `generation`, else `++*discarded`. The watcher is `context`'s child, so nothing runs once
// `context` is gone (`current` and `discarded` are members of it).
template <class T, class Done>
void whenLatestFinishes(QObject* context, QFuture<T> future, quint64 generation,
                        const quint64* current, int* discarded, Done done) {
    auto* watcher = new QFutureWatcher<T>(context);
    QObject::connect(watcher, &QFutureWatcher<T>::finished, context,
                     [watcher, generation, current, discarded, done = std::move(done)]() mutable {
                         watcher->deleteLater();
                         if (generation != *current) {
                             ++*discarded; // a newer request (or a cancel) made this one stale
                             return;
                         }
                         done(watcher->result());
                     });
    watcher->setFuture(std::move(future));
}

} // namespace kvl::widgets
