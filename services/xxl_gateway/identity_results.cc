// IdentityRuns, the result path: callbacks of the XXL executor, the reports of results to the
// dispatchers, deadlines and report retries (Tick), and the end of an executor's runs when it
// is gone (Abandon). The run path is in identity_runs.cc.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "common/model/proto_enums.h"
#include "common/time/proto_time.h"
#include "services/xxl_gateway/identity_runs.h"
#include "spdlog/spdlog.h"

namespace jobwheel::xxl {
namespace {

namespace v1 = jobwheel::v1;

// An ended run not reported this long after its end: Tick reports it again.
constexpr int64_t kReportRetryMs = 500;

v1::RunStatus StatusOfCode(int code) {
  if (code == 200) return v1::RUN_STATUS_SUCCEEDED;
  if (code == 502) return v1::RUN_STATUS_TIMED_OUT;
  return v1::RUN_STATUS_FAILED;
}

}  // namespace

absl::Status IdentityRuns::OnCallbacks(const std::vector<HandleCallbackParam>& items,
                                       int* refused) {
  std::vector<int64_t> next_jobs;
  std::vector<int64_t> to_report;
  absl::Status denied = absl::OkStatus();
  {
    absl::MutexLock lock(&mu_);
    for (const HandleCallbackParam& item : items) {
      std::optional<RunRecord> r = ledger_.Get(item.log_id());
      const int64_t date = item.log_date_tim() != 0 ? item.log_date_tim() : item.log_date_time();
      if (!r.has_value() || r->identity() != info_.key) {
        if (refused != nullptr) ++*refused;
        if (denied.ok()) {
          denied = absl::PermissionDeniedError(
              absl::StrCat("logId ", item.log_id(), " was not sent to this executor"));
        }
        continue;
      }
      if (r->state() == RUN_STATE_FENCED || r->state() == RUN_STATE_QUEUED) {
        continue;  // Never sent: nothing to record.
      }
      if (date != r->log_date_time_ms()) {
        if (refused != nullptr) ++*refused;
        if (denied.ok()) {
          denied = absl::PermissionDeniedError(
              absl::StrCat("logId ", item.log_id(),
                           ": logDateTim is not the one sent with the run (a callback is taken "
                           "only from the executor its run was sent to)"));
        }
        continue;
      }
      if (r->state() == RUN_STATE_ENDED) {
        if (!r->reported()) to_report.push_back(item.log_id());
        continue;  // Reported already: settled (e.g. killed here).
      }
      if (r->state() != RUN_STATE_RUNNING) continue;  // Refused when sent: nothing to record.
      const v1::RunStatus status = StatusOfCode(item.handle_code());
      std::string message = item.handle_msg();
      if (message.empty() && status != v1::RUN_STATUS_SUCCEEDED) {
        message = absl::StrCat("handleCode ", item.handle_code());
      }
      next_jobs.push_back(r->job_id());
      EndLocked(*r, status, item.handle_code(), message);
      to_report.push_back(item.log_id());
    }
  }
  for (int64_t job : next_jobs) async_([this, job] { StartNext(job); });
  absl::Status reported = to_report.empty() ? absl::OkStatus() : Report(to_report);
  return denied.ok() ? reported : denied;
}

absl::Status IdentityRuns::Report(const std::vector<int64_t>& run_ids) {
  std::vector<v1::RunResult> results;
  for (int64_t id : run_ids) {
    std::optional<RunRecord> r = ledger_.Get(id);
    if (!r.has_value() || r->state() != RUN_STATE_ENDED || r->reported()) continue;
    v1::RunResult res;
    res.set_run_id(id);
    res.set_status(static_cast<v1::RunStatus>(r->status()));
    res.set_code(r->code());
    res.set_message(r->message());
    if (r->start_ms() > 0) *res.mutable_start_time() = ToProto(absl::FromUnixMillis(r->start_ms()));
    *res.mutable_end_time() = ToProto(absl::FromUnixMillis(r->end_ms()));
    res.set_executor_address(info_.address);
    res.set_result_key(r->result_key());
    results.push_back(std::move(res));
  }
  if (results.empty()) return absl::OkStatus();
  const absl::Time from = clock_.Now();
  auto answer = results_.Report(info_.token, results);
  metrics_.Stage("report", absl::ToDoubleSeconds(clock_.Now() - from));
  if (!answer.ok()) {
    for (const auto& res : results) metrics_.Result(RunStatusShortName(res.status()), "failed");
    return answer.status();
  }
  absl::flat_hash_map<int64_t, bool> settled;
  for (int64_t id : answer->acked) settled[id] = true;
  for (int64_t id : answer->refused) settled[id] = false;
  absl::Status all = absl::OkStatus();
  absl::MutexLock lock(&mu_);
  for (const auto& res : results) {
    auto it = settled.find(res.run_id());
    if (it == settled.end()) {
      all = absl::UnavailableError(absl::StrCat("run ", res.run_id(), ": not acknowledged"));
      continue;
    }
    metrics_.Result(RunStatusShortName(res.status()), it->second ? "acked" : "refused");
    if (!it->second) {
      spdlog::warn("run {}: result refused for good by the dispatcher", res.run_id());
    }
    std::optional<RunRecord> r = ledger_.Get(res.run_id());
    open_.erase(res.run_id());
    if (r.has_value()) {
      r->set_reported(true);
      ledger_.Put(*r, RunLedger::Durability::kWritten).IgnoreError();
    }
  }
  return all;
}

void IdentityRuns::Tick() {
  const int64_t now = NowMs();
  std::vector<int64_t> unreported;
  std::vector<std::pair<int64_t, int64_t>> timed_out;  // (run, job)
  {
    absl::MutexLock lock(&mu_);
    const bool retry = now >= retry_reports_at_ms_;
    for (int64_t id : open_) {
      std::optional<RunRecord> found = ledger_.Get(id);
      if (!found.has_value()) continue;
      RunRecord& r = *found;
      if (r.state() == RUN_STATE_RUNNING && r.deadline_ms() > 0 && now >= r.deadline_ms()) {
        timed_out.emplace_back(r.run_id(), r.job_id());
        EndLocked(r, v1::RUN_STATUS_TIMED_OUT, 502,
                  "timed out: the XXL executor did not report within the job's timeout "
                  "(killed by the gateway)");
        unreported.push_back(r.run_id());
      } else if (r.state() == RUN_STATE_ENDED && !r.reported() && retry &&
                 now >= r.end_ms() + kReportRetryMs) {
        // Not reported by its own path (a callback, a kill) by now: that report failed.
        unreported.push_back(r.run_id());
      }
    }
  }
  for (const auto& [run, job] : timed_out) {
    KillOnXxl(job);
    async_([this, job = job] { StartNext(job); });
  }
  if (!unreported.empty() && !Report(unreported).ok()) {
    absl::MutexLock lock(&mu_);
    retry_reports_at_ms_ = NowMs() + 1000;  // Dispatchers unreachable: once a second.
  }
}

void IdentityRuns::Abandon(const std::string& why) {
  absl::MutexLock lock(&mu_);
  const std::vector<int64_t> open(open_.begin(), open_.end());
  for (int64_t id : open) {
    std::optional<RunRecord> r = ledger_.Get(id);
    if (!r.has_value()) continue;
    if (r->state() != RUN_STATE_RUNNING && r->state() != RUN_STATE_QUEUED) continue;
    EndLocked(*r, v1::RUN_STATUS_LOST, 0, why);
    r->set_reported(true);  // The registry's offline decision settles it; nothing to send.
    ledger_.Put(*r, RunLedger::Durability::kWritten).IgnoreError();
    open_.erase(id);
  }
  lanes_.clear();
}

}  // namespace jobwheel::xxl
