#include "services/dispatcher/result_ingestion.h"

#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "spdlog/spdlog.h"

namespace jobwheel::dispatcher {

void TruncateResultMessage(std::string* msg, size_t max_bytes) {
  if (msg->size() <= max_bytes) return;
  size_t cut = max_bytes;
  // Never split a UTF-8 sequence: back up over continuation bytes.
  while (cut > 0 && (static_cast<unsigned char>((*msg)[cut]) & 0xC0) == 0x80) --cut;
  msg->resize(cut);
  msg->append(" \xE2\x80\xA6(truncated)");
}

ResultIngestion::ResultIngestion(DispatchStore& store, OutcomeWriter& answers,
                                 DispatcherMetrics* metrics, Clock& clock, size_t max_message_bytes)
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
    if (metrics_ != nullptr && put_back.size() < taken) {
      metrics_->TriggerAnswersFolded(taken - put_back.size());
    }
    answers_.EndFold(taken, std::move(put_back));
  }
  for (const ResultRecord& rec : *records) {
    if (rec.disposition == ResultDisposition::kForbidden) {
      spdlog::warn("result for run {} refused: its app is not on the reporting executor's token",
                   rec.run_id);
      continue;  // Not acknowledged: an executor with the right token may still report it.
    }
    response.add_acked_run_ids(rec.run_id);
    switch (rec.disposition) {
      case ResultDisposition::kRecorded:
        if (metrics_ != nullptr) {
          metrics_->Result("recorded");
          metrics_->RunFinished(rec.status);
        }
        break;
      case ResultDisposition::kDuplicate:
        if (metrics_ != nullptr) metrics_->Result("duplicate");
        break;
      case ResultDisposition::kUnknown:
        spdlog::warn("result for unknown run {}: acknowledged and dropped", rec.run_id);
        if (metrics_ != nullptr) metrics_->Result("unknown");
        break;
      case ResultDisposition::kForbidden:
        break;  // Handled above.
    }
  }
  return response;
}

}  // namespace jobwheel::dispatcher
