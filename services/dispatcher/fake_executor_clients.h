#ifndef JOBWHEEL_SERVICES_DISPATCHER_FAKE_EXECUTOR_CLIENTS_H_
#define JOBWHEEL_SERVICES_DISPATCHER_FAKE_EXECUTOR_CLIENTS_H_

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "services/dispatcher/executor_clients.h"

namespace jobwheel::dispatcher {

// Scripted executors for tests: addresses marked down fail every call with UNAVAILABLE, busy
// ones say not idle, RunBatch answers each run `disposition` (default STARTED) or what
// SetAnswer's function says, or fails with the error SetRunBatchError gave the address (the
// runs then never reached it), or with the error SetLostAnswer gave it after the runs were
// taken (the answer lost on its way back). Records the runs received and the RunBatch calls
// made. GetRuns answers from the runs each address took (RUNNING, or ENDED after
// SetEnded), fences the others when asked (a later RunBatch of a fenced id is REJECTED and
// not received), or fails with SetGetRunsError's error. Thread-safe.
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
  // Overrides SetDisposition: each run's answer from its request.
  void SetAnswer(std::function<v1::RunResponse(const v1::RunRequest&)> answer) {
    absl::MutexLock lock(&mu_);
    answer_ = std::move(answer);
  }
  // RunBatch calls to `address` fail with `error` before any run reaches it (e.g.
  // UNIMPLEMENTED); OK clears it.
  void SetRunBatchError(const std::string& address, absl::Status error) {
    absl::MutexLock lock(&mu_);
    if (error.ok()) {
      batch_error_.erase(address);
    } else {
      batch_error_[address] = std::move(error);
    }
  }
  // RunBatch calls to `address` take their runs (as the executor would: received, answered)
  // and then fail with `error`, as a lost answer; OK clears it.
  void SetLostAnswer(const std::string& address, absl::Status error) {
    absl::MutexLock lock(&mu_);
    if (error.ok()) {
      lost_answer_.erase(address);
    } else {
      lost_answer_[address] = std::move(error);
    }
  }
  // GetRuns calls to `address` fail with `error`; OK clears it.
  void SetGetRunsError(const std::string& address, absl::Status error) {
    absl::MutexLock lock(&mu_);
    if (error.ok()) {
      get_runs_error_.erase(address);
    } else {
      get_runs_error_[address] = std::move(error);
    }
  }
  // GetRuns says every run taken ENDED with `status` (UNSPECIFIED: RUNNING, the default).
  void SetEnded(v1::RunStatus status) {
    absl::MutexLock lock(&mu_);
    ended_ = status;
  }
  size_t get_runs_calls() const {
    absl::MutexLock lock(&mu_);
    return get_runs_calls_;
  }
  // Every run received (not those of calls failed by SetRunBatchError).
  std::vector<std::pair<std::string, v1::RunRequest>> runs() const {
    absl::MutexLock lock(&mu_);
    return runs_;
  }
  size_t run_count() const {
    absl::MutexLock lock(&mu_);
    return runs_.size();
  }
  // RunBatch calls made (those failed by SetRunBatchError included): address and number of
  // runs.
  std::vector<std::pair<std::string, int>> batch_calls() const {
    absl::MutexLock lock(&mu_);
    return batch_calls_;
  }

  void RunBatchAsync(absl::string_view, absl::string_view address, v1::RunBatchRequest request,
                     absl::Duration, RunBatchCallback done) override {
    absl::StatusOr<v1::RunBatchResponse> result;
    {
      absl::MutexLock lock(&mu_);
      batch_calls_.emplace_back(std::string(address), request.runs_size());
      if (auto error = batch_error_.find(address); error != batch_error_.end()) {
        result = error->second;
      } else if (down_.contains(address)) {
        for (const v1::RunRequest& r : request.runs()) runs_.emplace_back(std::string(address), r);
        result = absl::UnavailableError("connection refused");
      } else {
        v1::RunBatchResponse response;
        for (const v1::RunRequest& r : request.runs()) {
          const std::pair<std::string, int64_t> key(std::string(address), r.run_id());
          if (fenced_.contains(key)) {
            v1::RunResponse refused;
            refused.set_disposition(v1::RUN_DISPOSITION_REJECTED);
            refused.set_message("fenced");
            *response.add_responses() = refused;
            continue;
          }
          runs_.emplace_back(std::string(address), r);
          taken_.insert(key);
          *response.add_responses() = AnswerLocked(r);
        }
        result = std::move(response);
        if (auto lost = lost_answer_.find(address); lost != lost_answer_.end()) {
          result = lost->second;
        }
      }
    }
    done(std::move(result));
  }
  absl::Status Beat(absl::string_view, absl::string_view address, absl::Duration) override {
    absl::MutexLock lock(&mu_);
    if (down_.contains(address)) return absl::UnavailableError("connection refused");
    return absl::OkStatus();
  }
  absl::StatusOr<v1::GetRunsResponse> GetRuns(absl::string_view, absl::string_view address,
                                              const v1::GetRunsRequest& request,
                                              absl::Duration) override {
    absl::MutexLock lock(&mu_);
    ++get_runs_calls_;
    if (auto error = get_runs_error_.find(address); error != get_runs_error_.end()) {
      return error->second;
    }
    if (down_.contains(address)) return absl::UnavailableError("connection refused");
    v1::GetRunsResponse response;
    for (int64_t id : request.run_ids()) {
      const std::pair<std::string, int64_t> key(std::string(address), id);
      v1::RunPresenceState* state = response.add_runs();
      state->set_run_id(id);
      if (taken_.contains(key)) {
        if (ended_ != v1::RUN_STATUS_UNSPECIFIED) {
          state->set_presence(v1::RUN_PRESENCE_ENDED);
          state->set_status(ended_);
        } else {
          state->set_presence(v1::RUN_PRESENCE_RUNNING);
        }
      } else if (fenced_.contains(key) || request.fence()) {
        fenced_.insert(key);
        state->set_presence(v1::RUN_PRESENCE_FENCED);
      } else {
        state->set_presence(v1::RUN_PRESENCE_NOT_SEEN);
      }
    }
    return response;
  }
  absl::StatusOr<v1::IdleBeatResponse> IdleBeat(absl::string_view, absl::string_view address,
                                                int64_t, absl::Duration) override {
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

  v1::RunResponse AnswerLocked(const v1::RunRequest& request) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (answer_) return answer_(request);
    v1::RunResponse r;
    r.set_disposition(disposition_);
    r.set_message(message_);
    return r;
  }

  absl::flat_hash_map<std::string, absl::Status> batch_error_ ABSL_GUARDED_BY(mu_);
  std::function<v1::RunResponse(const v1::RunRequest&)> answer_ ABSL_GUARDED_BY(mu_);
  std::vector<std::pair<std::string, int>> batch_calls_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, absl::Status> lost_answer_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, absl::Status> get_runs_error_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<std::pair<std::string, int64_t>> taken_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<std::pair<std::string, int64_t>> fenced_ ABSL_GUARDED_BY(mu_);
  v1::RunStatus ended_ ABSL_GUARDED_BY(mu_) = v1::RUN_STATUS_UNSPECIFIED;
  size_t get_runs_calls_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace jobwheel::dispatcher

#endif  // JOBWHEEL_SERVICES_DISPATCHER_FAKE_EXECUTOR_CLIENTS_H_
