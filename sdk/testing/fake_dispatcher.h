#ifndef JOBWHEEL_SDK_TESTING_FAKE_DISPATCHER_H_
#define JOBWHEEL_SDK_TESTING_FAKE_DISPATCHER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/grpcpp.h"
#include "jobwheel/v1/dispatcher.grpc.pb.h"

namespace jobwheel::sdk::testing {

// An in-process DispatcherService that records ReportResults (acknowledging every result,
// except those refused: see RequireKey) or fails with UNAVAILABLE while told to. Dispatch is
// not implemented. Thread-safe.
class FakeDispatcher final : public jobwheel::v1::DispatcherService::Service {
 public:
  explicit FakeDispatcher(std::string token = "");
  ~FakeDispatcher() override;

  // Serves on `address` (default any free port); returns "127.0.0.1:<port>".
  absl::StatusOr<std::string> Start(const std::string& address = "127.0.0.1:0");
  void Stop();

  grpc::Status ReportResults(grpc::ServerContext* ctx,
                             const jobwheel::v1::ReportResultsRequest* request,
                             jobwheel::v1::ReportResultsResponse* response) override;

  void SetDown(bool down);
  // Results for `run_id` are recorded only with this result key; others are refused
  // (refused_run_ids), as a dispatcher does.
  void RequireKey(int64_t run_id, std::string key);
  int refused() const;  // Results refused so far.
  // The last result received per run id.
  std::map<int64_t, jobwheel::v1::RunResult> results() const;
  bool Has(int64_t run_id) const;
  jobwheel::v1::RunResult Get(int64_t run_id) const;
  int calls() const;
  int results_received() const;  // Including duplicates.

 private:
  const std::string token_;
  std::unique_ptr<grpc::Server> server_;
  mutable absl::Mutex mu_;
  bool down_ ABSL_GUARDED_BY(mu_) = false;
  std::map<int64_t, jobwheel::v1::RunResult> results_ ABSL_GUARDED_BY(mu_);
  int calls_ ABSL_GUARDED_BY(mu_) = 0;
  int received_ ABSL_GUARDED_BY(mu_) = 0;
  int refused_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<int64_t, std::string> keys_ ABSL_GUARDED_BY(mu_);
};

}  // namespace jobwheel::sdk::testing

#endif  // JOBWHEEL_SDK_TESTING_FAKE_DISPATCHER_H_
