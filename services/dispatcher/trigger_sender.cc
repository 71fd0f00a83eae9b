#include "services/dispatcher/trigger_sender.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "common/time/proto_time.h"

namespace jobwheel::dispatcher {

TriggerOutcome OutcomeOf(int64_t run_id, const absl::StatusOr<v1::RunResponse>& r, absl::Time at,
                         std::string* label) {
  if (!r.ok()) {
    *label = "error";
    return TriggerFailed(run_id, r.status(), at);
  }
  TriggerOutcome o;
  o.run_id = run_id;
  o.at = at;
  std::string answer;
  switch (r->disposition()) {
    case v1::RUN_DISPOSITION_STARTED:
      o.status = v1::RUN_STATUS_RUNNING;
      answer = "STARTED";
      *label = "started";
      break;
    case v1::RUN_DISPOSITION_QUEUED:
      o.status = v1::RUN_STATUS_RUNNING;
      answer = "QUEUED";
      *label = "queued";
      break;
    case v1::RUN_DISPOSITION_DISCARDED:
      o.status = v1::RUN_STATUS_DISCARDED;
      answer = "DISCARDED";
      *label = "discarded";
      break;
    default:
      o.status = v1::RUN_STATUS_FAILED;
      answer = r->disposition() == v1::RUN_DISPOSITION_REJECTED ? "REJECTED" : "no disposition";
      *label = "rejected";
      break;
  }
  o.message_suffix = absl::StrCat("; executor: ", answer);
  if (!r->message().empty()) absl::StrAppend(&o.message_suffix, " (", r->message(), ")");
  return o;
}

TriggerSender::TriggerSender(ExecutorClients& executors, TriggerPools& pools,
                             DispatcherMetrics& metrics, Clock& clock, Options options,
                             AnswerSink answers, TriggerResolver* resolver)
    : executors_(executors),
      pools_(pools),
      metrics_(metrics),
      clock_(clock),
      options_(options),
      answers_(std::move(answers)),
      resolver_(resolver) {}

void TriggerSender::Send(std::vector<RoutedRun> runs) {
  // One call carries the runs of one app: its token names the app (see ExecutorClients).
  struct Group {
    std::string app;
    std::string address;
    TriggerPool pool;
    std::vector<PendingRun> runs;
  };
  std::vector<Group> groups;
  absl::flat_hash_map<std::tuple<std::string, std::string, TriggerPool>, size_t> group_of;
  const size_t max_batch = std::max<size_t>(1, options_.max_runs_per_batch);
  const absl::Time now = clock_.Now();
  for (RoutedRun& r : runs) {
    metrics_.TriggerLateness(now - FromProto(r.run.request.scheduled_time()));
    auto [it, added] = group_of.try_emplace(std::make_tuple(r.run.request.app(), r.address, r.pool),
                                            groups.size());
    if (added) groups.push_back(Group{r.run.request.app(), std::move(r.address), r.pool, {}});
    Group& g = groups[it->second];
    g.runs.push_back(std::move(r.run));
    if (g.runs.size() >= max_batch) {
      SendBatch(g.app, g.address, g.pool, std::exchange(g.runs, std::vector<PendingRun>()));
    }
  }
  for (Group& g : groups) {
    if (!g.runs.empty()) SendBatch(g.app, g.address, g.pool, std::move(g.runs));
  }
}

void TriggerSender::SendBatch(const std::string& app, const std::string& address, TriggerPool pool,
                              std::vector<PendingRun> runs) {
  std::vector<int64_t> job_ids;
  job_ids.reserve(runs.size());
  for (const PendingRun& run : runs) job_ids.push_back(run.request.job_id());
  metrics_.TriggerBatchSize(runs.size());
  auto batch = std::make_shared<const std::vector<PendingRun>>(std::move(runs));
  const size_t run_count = batch->size();
  // The call is asynchronous: no thread waits for the executor, and the batches of a Dispatch
  // are all on their way at once. The call's duration counts for every job of the batch in the
  // slow-pool classification.
  const absl::Status submitted = pools_.SubmitAppBatchAsync(
      pool, app, run_count, std::move(job_ids),
      [this, app, address, batch](std::function<void()> done) {
        v1::RunBatchRequest req;
        req.mutable_runs()->Reserve(static_cast<int>(batch->size()));
        for (const PendingRun& run : *batch) *req.add_runs() = run.request;
        executors_.RunBatchAsync(
            app, address, std::move(req), options_.run_deadline,
            [this, app, address, batch,
             done = std::move(done)](absl::StatusOr<v1::RunBatchResponse> r) {
              if (r.ok() && static_cast<size_t>(r->responses_size()) != batch->size()) {
                r = absl::InternalError(absl::StrCat("RunBatch of ", batch->size(),
                                                     " runs answered with ", r->responses_size(),
                                                     " responses"));
              }
              if (!r.ok() && resolver_ != nullptr && TriggerAnswerUnknown(r.status())) {
                // The executor may have started them: never FAILED before it is asked.
                std::vector<int64_t> ids;
                ids.reserve(batch->size());
                for (const PendingRun& run : *batch) {
                  ids.push_back(run.request.run_id());
                  metrics_.Triggered(run.strategy, "unknown");
                }
                resolver_->Resolve(app, address, std::move(ids), r.status());
                done();
                return;
              }
              for (size_t i = 0; i < batch->size(); ++i) {
                if (r.ok()) {
                  Answer((*batch)[i], std::move(*r->mutable_responses(static_cast<int>(i))));
                } else {
                  Answer((*batch)[i], r.status());
                }
              }
              done();
            });
      });
  if (!submitted.ok()) {
    // Shutting down, or the pool's queue full (executors slower than the offered rate): the
    // runs fail now with the reason instead of waiting without bound.
    const absl::Time now = clock_.Now();
    const bool overloaded = submitted.code() == absl::StatusCode::kResourceExhausted;
    for (const PendingRun& run : *batch) {
      if (overloaded) metrics_.Triggered(run.strategy, "overloaded");
      answers_(NotTriggered(run.request.run_id(), submitted.message(), now));
    }
  }
}

void TriggerSender::Answer(const PendingRun& run, const absl::StatusOr<v1::RunResponse>& answer) {
  std::string label;
  TriggerOutcome o = OutcomeOf(run.request.run_id(), answer, clock_.Now(), &label);
  metrics_.Triggered(run.strategy, label);
  answers_(std::move(o));
}

}  // namespace jobwheel::dispatcher
