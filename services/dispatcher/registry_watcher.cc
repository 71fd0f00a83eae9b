#include "services/dispatcher/registry_watcher.h"

#include <algorithm>
#include <random>
#include <utility>

#include "common/auth/bearer.h"
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
  std::minstd_rand jitter(std::random_device{}());
  absl::Duration backoff = options_.initial_backoff;
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
        backoff = options_.initial_backoff;
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
    spdlog::warn("registry watch: stream ended ({} {}); reconnecting in {}",
                 static_cast<int>(status.error_code()), status.error_message(),
                 absl::FormatDuration(backoff));
    // Interruptible backoff: Shutdown() wakes it.
    const absl::Duration wait =
        backoff + absl::Milliseconds(jitter() % (1 + absl::ToInt64Milliseconds(backoff) / 2));
    {
      absl::MutexLock lock(&mu_);
      clock_.AwaitWithDeadline(&mu_, absl::Condition(&stopping_), clock_.Now() + wait);
      if (stopping_) return;
    }
    backoff = std::min(backoff * 2, options_.max_backoff);
  }
}

}  // namespace jobwheel::dispatcher
