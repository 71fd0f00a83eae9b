#include "services/dispatcher/result_ingestion.h"

#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "common/base/log_text.h"
#include "services/dispatcher/result_message.h"
#include "spdlog/spdlog.h"

namespace jobwheel::dispatcher {

ResultIngestion::ResultIngestion(DispatchStore& store, OutcomeWriter& answers,
                                 DispatcherMetrics& metrics, Clock& clock, size_t max_message_bytes)
    : store_(store),
      answers_(answers),
      metrics_(metrics),
      clock_(clock),
      max_message_bytes_(max_message_bytes) {}

absl::StatusOr<v1::ReportResultsResponse> ResultIngestion::Report(
    const v1::ReportResultsRequest& request, const AppScope& scope) {
  std::vector<v1::RunResult> distinct;
  distinct.reserve(request.results_size());
  absl::flat_hash_set<int64_t> seen;
  for (const v1::RunResult& r : request.results()) {
    if (!seen.insert(r.run_id()).second) continue;
    distinct.push_back(r);
    TruncateResultMessage(distinct.back().mutable_message(), max_message_bytes_);
  }
  v1::ReportResultsResponse response;
  if (distinct.empty()) return response;
  // Held trigger answers of these runs ride along with their results (one write per run).
  std::vector<TriggerOutcome> carried = answers_.TakeHeld(distinct);
  const size_t taken = carried.size();
  absl::StatusOr<std::vector<ResultRecord>> records =
      store_.RecordResults(distinct, clock_.Now(), scope, carried);
  if (!records.ok()) {
    answers_.EndFold(taken, std::move(carried));  // Nothing written: all back to the writer.
    return records.status();
  }
  if (taken > 0) {
    // An answer whose result was not recorded (duplicate, unknown, forbidden) was not
    // written either: it goes back to be written on its own.
    absl::flat_hash_set<int64_t> recorded;
    for (const ResultRecord& rec : *records) {
      if (rec.disposition == ResultDisposition::kRecorded) recorded.insert(rec.run_id);
    }
    std::vector<TriggerOutcome> put_back;
    for (TriggerOutcome& a : carried) {
      if (!recorded.contains(a.run_id)) put_back.push_back(std::move(a));
    }
    if (put_back.size() < taken) {
      metrics_.TriggerAnswersFolded(taken - put_back.size());
    }
    answers_.EndFold(taken, std::move(put_back));
  }
  absl::flat_hash_map<int64_t, const v1::RunResult*> result_of;
  for (const v1::RunResult& r : distinct) result_of.emplace(r.run_id(), &r);
  for (const ResultRecord& rec : *records) {
    // What is logged of a result: never its key.
    auto from = [&] {
      const v1::RunResult& r = *result_of.at(rec.run_id);
      return absl::StrCat(
          v1::RunStatus_Name(r.status()), " from ",
          r.executor_address().empty() ? "(no address)" : LogText(r.executor_address()));
    };
    switch (rec.disposition) {
      case ResultDisposition::kForbidden:
        // Answered exactly as an unknown run is, so an executor learns nothing of the runs of
        // other apps (the run is untouched: its own executor still reports it).
        response.add_refused_run_ids(rec.run_id);
        if (auto v = refusal_log_.Admit("forbidden"); v.log) {
          spdlog::warn(
              "result for run {} ({}) refused: its app is not on the reporting executor's "
              "token{}",
              rec.run_id, from(), LogRateLimiter::SuppressedNote(v.suppressed));
        }
        metrics_.ResultRefused("forbidden");
        break;
      case ResultDisposition::kRecorded:
        response.add_acked_run_ids(rec.run_id);
        metrics_.Result("recorded");
        metrics_.RunFinished(rec.status);
        break;
      case ResultDisposition::kDuplicate:
        response.add_acked_run_ids(rec.run_id);
        metrics_.Result("duplicate");
        break;
      case ResultDisposition::kLate:
        response.add_acked_run_ids(rec.run_id);
        spdlog::warn(
            "late result for run {} ({}): its status was already decided; kept as its "
            "late result",
            rec.run_id, from());
        metrics_.Result("late");
        break;
      case ResultDisposition::kUnknown:
        response.add_refused_run_ids(rec.run_id);
        if (auto v = refusal_log_.Admit("no_run"); v.log) {
          spdlog::warn("result for run {} ({}) refused: no such run{}", rec.run_id, from(),
                       LogRateLimiter::SuppressedNote(v.suppressed));
        }
        metrics_.ResultRefused("no_run");
        break;
      case ResultDisposition::kBadKey:
        response.add_refused_run_ids(rec.run_id);
        if (auto v = refusal_log_.Admit("bad_key"); v.log) {
          spdlog::warn("result for run {} ({}) refused: {} result key{}", rec.run_id, from(),
                       result_of.at(rec.run_id)->result_key().empty() ? "no" : "wrong",
                       LogRateLimiter::SuppressedNote(v.suppressed));
        }
        metrics_.ResultRefused("bad_key");
        break;
    }
  }
  return response;
}

}  // namespace jobwheel::dispatcher
