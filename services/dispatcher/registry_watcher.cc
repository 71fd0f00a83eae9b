#include "services/dispatcher/registry_watcher.h"

#include <algorithm>
#include <utility>

#include "absl/random/random.h"
#include "common/auth/bearer.h"
#include "common/base/backoff.h"
#include "spdlog/spdlog.h"

namespace jobwheel::dispatcher {

RegistryWatcher::RegistryWatcher(std::unique_ptr<v1::RegistryService::StubInterface> stub,
                                 ExecutorDirectory& directory, Clock& clock, Options options)
    : stub_(std::move(stub)), directory_(directory), clock_(clock), options_(std::move(options)) {}

RegistryWatcher::~RegistryWatcher() { Shutdown(); }

void RegistryWatcher::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void RegistryWatcher::Shutdown() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    if (ctx_ != nullptr) ctx_->TryCancel();
  }
  if (thread_.joinable()) thread_.join();
}

bool RegistryWatcher::connected() const {
  absl::MutexLock lock(&mu_);
  return connected_;
}

void RegistryWatcher::Loop() {
  absl::BitGen gen;
  Backoff backoff(options_.initial_backoff, options_.max_backoff);
  while (true) {
    grpc::ClientContext ctx;
    // Fails only if signing fails, which a loaded key does not.
    absl::Status auth = AddCallerToken(ctx, options_.signer, kAudienceRegistry);
    if (!auth.ok()) spdlog::error("registry watch: {}", auth.ToString());
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
      ctx_ = &ctx;
    }
    v1::WatchExecutorsRequest request;  // app "" = all apps.
    std::unique_ptr<grpc::ClientReaderInterface<v1::WatchExecutorsResponse>> reader =
        stub_->WatchExecutors(&ctx, request);
    v1::WatchExecutorsResponse event;
    int64_t events = 0;
    while (reader->Read(&event)) {
      if (events++ == 0) {
        spdlog::info("registry watch: connected, snapshot version {} with {} executors",
                     event.version(), event.executors_size());
        absl::MutexLock lock(&mu_);
        connected_ = true;
        backoff.Reset();
      }
      if (!directory_.Apply(event)) {
        spdlog::debug("registry watch: ignored event version {} type {}", event.version(),
                      static_cast<int>(event.type()));
      }
    }
    grpc::Status status = reader->Finish();
    bool stopping;
    {
      absl::MutexLock lock(&mu_);
      ctx_ = nullptr;
      connected_ = false;
      stopping = stopping_;
    }
    if (stopping) return;
    const absl::Duration wait = backoff.Next(gen);
    spdlog::warn("registry watch: stream ended ({} {}); reconnecting in {}",
                 static_cast<int>(status.error_code()), status.error_message(),
                 absl::FormatDuration(wait));
    // Interruptible backoff: Shutdown() wakes it.
    {
      absl::MutexLock lock(&mu_);
      clock_.AwaitWithDeadline(&mu_, absl::Condition(&stopping_), clock_.Now() + wait);
      if (stopping_) return;
    }
  }
}

}  // namespace jobwheel::dispatcher
