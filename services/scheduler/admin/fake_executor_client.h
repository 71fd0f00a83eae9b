#ifndef JOBWHEEL_SERVICES_SCHEDULER_ADMIN_FAKE_EXECUTOR_CLIENT_H_
#define JOBWHEEL_SERVICES_SCHEDULER_ADMIN_FAKE_EXECUTOR_CLIENT_H_

#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "services/scheduler/admin/executor_client.h"

namespace jobwheel::scheduler::admin {

// ExecutorClient for tests: answers with canned responses and records the addresses called.
// Thread-safe.
class FakeExecutorClient : public ExecutorClient {
 public:
  void SetKillResponse(absl::StatusOr<jobwheel::v1::KillResponse> r) {
    absl::MutexLock lock(&mu_);
    kill_ = std::move(r);
  }
  void SetLogResponse(absl::StatusOr<jobwheel::v1::LogResponse> r) {
    absl::MutexLock lock(&mu_);
    log_ = std::move(r);
  }
  std::vector<std::string> calls() const {
    absl::MutexLock lock(&mu_);
    return calls_;
  }
  jobwheel::v1::LogRequest last_log_request() const {
    absl::MutexLock lock(&mu_);
    return last_log_;
  }

  absl::StatusOr<jobwheel::v1::KillResponse> Kill(absl::string_view, absl::string_view address,
                                                  const jobwheel::v1::KillRequest&) override {
    absl::MutexLock lock(&mu_);
    calls_.push_back(std::string("Kill ") + std::string(address));
    return kill_;
  }
  absl::StatusOr<jobwheel::v1::LogResponse> Log(absl::string_view, absl::string_view address,
                                                const jobwheel::v1::LogRequest& req) override {
    absl::MutexLock lock(&mu_);
    calls_.push_back(std::string("Log ") + std::string(address));
    last_log_ = req;
    return log_;
  }

 private:
  mutable absl::Mutex mu_;
  absl::StatusOr<jobwheel::v1::KillResponse> kill_ ABSL_GUARDED_BY(mu_) =
      absl::UnavailableError("no kill response configured");
  absl::StatusOr<jobwheel::v1::LogResponse> log_ ABSL_GUARDED_BY(mu_) =
      absl::UnavailableError("no log response configured");
  std::vector<std::string> calls_ ABSL_GUARDED_BY(mu_);
  jobwheel::v1::LogRequest last_log_ ABSL_GUARDED_BY(mu_);
};

}  // namespace jobwheel::scheduler::admin

#endif  // JOBWHEEL_SERVICES_SCHEDULER_ADMIN_FAKE_EXECUTOR_CLIENT_H_
