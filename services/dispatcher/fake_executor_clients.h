#ifndef JOBWHEEL_SERVICES_DISPATCHER_FAKE_EXECUTOR_CLIENTS_H_
#define JOBWHEEL_SERVICES_DISPATCHER_FAKE_EXECUTOR_CLIENTS_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "services/dispatcher/executor_clients.h"

namespace jobwheel::dispatcher {

// Scripted executors for tests: addresses marked down fail every call with UNAVAILABLE, busy
// ones say not idle, Run answers `disposition` (default STARTED). Records Run calls.
// Thread-safe.
class FakeExecutorClients : public ExecutorClients {
 public:
  void SetDown(const std::string& address, bool down) {
    absl::MutexLock lock(&mu_);
    if (down) {
      down_.insert(address);
    } else {
      down_.erase(address);
    }
  }
  void SetBusy(const std::string& address, bool busy) {
    absl::MutexLock lock(&mu_);
    if (busy) {
      busy_.insert(address);
    } else {
      busy_.erase(address);
    }
  }
  void SetDisposition(v1::RunDisposition d, std::string message = "") {
    absl::MutexLock lock(&mu_);
    disposition_ = d;
    message_ = std::move(message);
  }
  std::vector<std::pair<std::string, v1::RunRequest>> runs() const {
    absl::MutexLock lock(&mu_);
    return runs_;
  }
  size_t run_count() const {
    absl::MutexLock lock(&mu_);
    return runs_.size();
  }

  absl::StatusOr<v1::RunResponse> Run(absl::string_view address, const v1::RunRequest& request,
                                      absl::Duration) override {
    absl::MutexLock lock(&mu_);
    runs_.emplace_back(std::string(address), request);
    if (down_.contains(address)) return absl::UnavailableError("connection refused");
    v1::RunResponse r;
    r.set_disposition(disposition_);
    r.set_message(message_);
    return r;
  }
  absl::Status Beat(absl::string_view address, absl::Duration) override {
    absl::MutexLock lock(&mu_);
    if (down_.contains(address)) return absl::UnavailableError("connection refused");
    return absl::OkStatus();
  }
  absl::StatusOr<v1::IdleBeatResponse> IdleBeat(absl::string_view address, int64_t,
                                                absl::Duration) override {
    absl::MutexLock lock(&mu_);
    if (down_.contains(address)) return absl::UnavailableError("connection refused");
    v1::IdleBeatResponse r;
    r.set_idle(!busy_.contains(address));
    r.set_running(busy_.contains(address) ? 1 : 0);
    return r;
  }

 private:
  mutable absl::Mutex mu_;
  absl::flat_hash_set<std::string> down_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<std::string> busy_ ABSL_GUARDED_BY(mu_);
  v1::RunDisposition disposition_ ABSL_GUARDED_BY(mu_) = v1::RUN_DISPOSITION_STARTED;
  std::string message_ ABSL_GUARDED_BY(mu_);
  std::vector<std::pair<std::string, v1::RunRequest>> runs_ ABSL_GUARDED_BY(mu_);
};

}  // namespace jobwheel::dispatcher

#endif  // JOBWHEEL_SERVICES_DISPATCHER_FAKE_EXECUTOR_CLIENTS_H_
