#ifndef JOBWHEEL_SERVICES_CONSOLE_FAKE_BACKEND_CALLER_H_
#define JOBWHEEL_SERVICES_CONSOLE_FAKE_BACKEND_CALLER_H_

#include <functional>
#include <string>
#include <utility>

#include "absl/synchronization/mutex.h"
#include "services/console/backend_caller.h"

namespace jobwheel::console {

// A BackendCaller for tests: records the last call and answers with `answer`. Thread-safe.
class FakeBackendCaller : public BackendCaller {
 public:
  struct CallRecord {
    Backend backend = Backend::kScheduler;
    std::string grpc_path;
    std::string request;
    std::string authorization;
    std::string client;
    absl::Time deadline;
  };
  using Answer = std::function<absl::StatusOr<std::string>(const CallRecord&)>;

  explicit FakeBackendCaller(Answer answer) : answer_(std::move(answer)) {}

  absl::StatusOr<std::string> Call(Backend backend, const std::string& grpc_path,
                                   const std::string& request, const std::string& authorization,
                                   const std::string& client, absl::Time deadline) override {
    CallRecord record{backend, grpc_path, request, authorization, client, deadline};
    {
      absl::MutexLock lock(&mu_);
      last_ = record;
      ++calls_;
    }
    return answer_(record);
  }

  CallRecord last() const {
    absl::MutexLock lock(&mu_);
    return last_;
  }
  int calls() const {
    absl::MutexLock lock(&mu_);
    return calls_;
  }

 private:
  const Answer answer_;
  mutable absl::Mutex mu_;
  CallRecord last_ ABSL_GUARDED_BY(mu_);
  int calls_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace jobwheel::console

#endif  // JOBWHEEL_SERVICES_CONSOLE_FAKE_BACKEND_CALLER_H_
