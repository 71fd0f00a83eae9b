#include "services/dispatcher/trigger_resolver.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/model/proto_enums.h"
#include "services/dispatcher/routed_run.h"
#include "spdlog/spdlog.h"

namespace jobwheel::dispatcher {
namespace {

std::string Describe(const absl::Status& s) {
  return absl::StrCat(absl::StatusCodeToString(s.code()), ": ", s.message());
}

std::string PresenceName(v1::RunPresence p) {
  const std::string& name = v1::RunPresence_Name(p);
  return name.empty() ? "UNSPECIFIED" : ShortEnumName(name, "RUN_PRESENCE_");
}

// GetRuns errors that no retry mends.
bool Permanent(const absl::Status& s) {
  return s.code() == absl::StatusCode::kUnimplemented ||
         s.code() == absl::StatusCode::kInvalidArgument ||
         s.code() == absl::StatusCode::kPermissionDenied;
}

}  // namespace

bool TriggerAnswerUnknown(const absl::Status& error) {
  switch (error.code()) {
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kCancelled:
    case absl::StatusCode::kInternal:
    case absl::StatusCode::kUnknown:
      return true;
    case absl::StatusCode::kUnavailable: {
      // No connection was made: the request never left.
      const std::string m = absl::AsciiStrToLower(error.message());
      for (absl::string_view never_sent :
           {"failed to connect", "connection refused", "dns resolution failed",
            "name resolution failed", "no address"}) {
        if (absl::StrContains(m, never_sent)) return false;
      }
      return true;
    }
    default:
      return false;
  }
}

std::optional<TriggerOutcome> ResolvedOutcome(const v1::RunPresenceState& state,
                                              const absl::Status& error, absl::Time at) {
  TriggerOutcome o;
  switch (state.presence()) {
    case v1::RUN_PRESENCE_FENCED:
      o = TriggerFailed(state.run_id(), error, at);
      absl::StrAppend(&o.message_suffix, "; executor (GetRuns): FENCED: never started, never will");
      return o;
    case v1::RUN_PRESENCE_QUEUED:
    case v1::RUN_PRESENCE_RUNNING:
    case v1::RUN_PRESENCE_ENDED:
      o.status = v1::RUN_STATUS_RUNNING;
      break;
    case v1::RUN_PRESENCE_REFUSED:
      o.status = state.status() == v1::RUN_STATUS_DISCARDED ? v1::RUN_STATUS_DISCARDED
                                                            : v1::RUN_STATUS_FAILED;
      break;
    default:
      return std::nullopt;
  }
  o.run_id = state.run_id();
  o.at = at;
  std::string said = PresenceName(state.presence());
  if (state.status() != v1::RUN_STATUS_UNSPECIFIED) {
    absl::StrAppend(&said, " ", RunStatusShortName(state.status()));
  }
  if (!state.message().empty()) absl::StrAppend(&said, " (", state.message(), ")");
  o.message_suffix =
      absl::StrCat("; trigger answer lost (", Describe(error), "); executor (GetRuns): ", said);
  return o;
}

TriggerOutcome UnknownOutcome(int64_t run_id, const absl::Status& error,
                              const std::string& why_unresolved, absl::Time at) {
  TriggerOutcome o;
  o.run_id = run_id;
  o.at = at;
  o.status = v1::RUN_STATUS_RUNNING;
  o.message_suffix =
      absl::StrCat("; trigger answer unknown: ", Describe(error), " (", why_unresolved,
                   "); left RUNNING: the executor's result, or its loss, decides the run");
  return o;
}

TriggerResolver::TriggerResolver(ExecutorClients& executors, Clock& clock, Options options,
                                 AnswerSink answers)
    : executors_(executors), clock_(clock), options_(options), answers_(std::move(answers)) {}

TriggerResolver::~TriggerResolver() { Shutdown(); }

void TriggerResolver::Start() {
  absl::MutexLock lock(&mu_);
  if (started_ || stopping_) return;
  started_ = true;
  for (int i = 0; i < std::max(1, options_.threads); ++i) {
    threads_.emplace_back([this] { Loop(); });
  }
}

void TriggerResolver::Shutdown() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
  // Never started: nothing asked them.
  std::multimap<absl::Time, Job> left;
  {
    absl::MutexLock lock(&mu_);
    left.swap(jobs_);
  }
  for (auto& [due, job] : left) AnswerUnknown(job, "dispatcher shut down before asking");
}

size_t TriggerResolver::pending() const {
  absl::MutexLock lock(&mu_);
  return jobs_.size() + asking_;
}

void TriggerResolver::Resolve(std::string app, std::string address, std::vector<int64_t> run_ids,
                              absl::Status error) {
  if (run_ids.empty()) return;
  Job job{std::move(app),
          std::move(address),
          std::move(run_ids),
          std::move(error),
          0,
          Backoff(options_.backoff_initial, options_.backoff_max),
          absl::OkStatus()};
  {
    absl::MutexLock lock(&mu_);
    if (!stopping_) {
      jobs_.emplace(clock_.Now(), std::move(job));
      return;
    }
  }
  AnswerUnknown(job, "dispatcher shutting down");
}

void TriggerResolver::Loop() {
  absl::MutexLock lock(&mu_);
  while (true) {
    if (jobs_.empty()) {
      if (stopping_) return;
      auto ready = [this]()
                       ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_ || !jobs_.empty(); };
      mu_.Await(absl::Condition(&ready));
      continue;
    }
    const absl::Time due = jobs_.begin()->first;
    if (!stopping_ && due > clock_.Now()) {
      // Until the earliest is due, an earlier one arrives, or stop.
      auto ready = [this, due]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_ || (!jobs_.empty() && jobs_.begin()->first < due);
      };
      clock_.AwaitWithDeadline(&mu_, absl::Condition(&ready), due);
      continue;
    }
    Job job = std::move(jobs_.begin()->second);
    jobs_.erase(jobs_.begin());
    ++asking_;
    const bool stopping = stopping_;
    mu_.Unlock();
    bool settled = true;
    if (stopping && job.attempts > 0) {
      // At shutdown a call already asked is not retried: the shutdown stays short.
      AnswerUnknown(job, FailedAttempts(job));
    } else {
      settled = Attempt(job, stopping || job.attempts + 1 >= options_.attempts);
    }
    mu_.Lock();
    --asking_;
    if (!settled) {
      const absl::Duration wait = job.backoff.Next(gen_);
      jobs_.emplace(clock_.Now() + wait, std::move(job));
    }
  }
}

std::string TriggerResolver::FailedAttempts(const Job& job) {
  return absl::StrCat("GetRuns failed ", job.attempts, " time(s), last: ", Describe(job.last));
}

bool TriggerResolver::Attempt(Job& job, bool last_attempt) {
  ++job.attempts;
  v1::GetRunsRequest request;
  request.mutable_run_ids()->Reserve(static_cast<int>(job.run_ids.size()));
  for (int64_t id : job.run_ids) request.add_run_ids(id);
  request.set_fence(true);
  absl::StatusOr<v1::GetRunsResponse> got =
      executors_.GetRuns(job.app, job.address, request, options_.call_deadline);
  if (got.ok() && static_cast<size_t>(got->runs_size()) != job.run_ids.size()) {
    got = absl::InternalError(absl::StrCat("GetRuns of ", job.run_ids.size(),
                                           " runs answered with ", got->runs_size(), " states"));
  }
  if (!got.ok()) {
    job.last = got.status();
    if (!last_attempt && !Permanent(got.status())) return false;
    spdlog::warn(
        "RunBatch to {} ({} runs) failed ({}) and GetRuns could not settle it ({} attempt(s), "
        "last: {}): the runs are left RUNNING",
        job.address, job.run_ids.size(), Describe(job.error), job.attempts, Describe(job.last));
    AnswerUnknown(job, FailedAttempts(job));
    return true;
  }
  const absl::Time now = clock_.Now();
  std::map<std::string, int> counts;
  std::vector<int64_t> unresolved;
  for (size_t i = 0; i < job.run_ids.size(); ++i) {
    const v1::RunPresenceState& state = got->runs(static_cast<int>(i));
    std::optional<TriggerOutcome> o =
        state.run_id() == job.run_ids[i] ? ResolvedOutcome(state, job.error, now) : std::nullopt;
    if (!o.has_value()) {
      unresolved.push_back(job.run_ids[i]);
      continue;
    }
    ++counts[PresenceName(state.presence())];
    answers_(std::move(*o));
  }
  std::vector<std::string> parts;
  for (const auto& [presence, n] : counts) {
    parts.push_back(absl::StrCat(presence, "=", n));
    if (options_.on_settled) options_.on_settled(absl::AsciiStrToLower(presence), n);
  }
  if (!parts.empty()) {
    spdlog::info("RunBatch to {} failed ({}); GetRuns settled {} of {} runs: {}", job.address,
                 Describe(job.error), job.run_ids.size() - unresolved.size(), job.run_ids.size(),
                 absl::StrJoin(parts, " "));
  }
  if (unresolved.empty()) return true;
  job.run_ids = std::move(unresolved);
  job.last = absl::UnknownError("the executor did not fence the runs (NOT_SEEN or no state)");
  if (!last_attempt) return false;
  AnswerUnknown(job, absl::StrCat("GetRuns: ", Describe(job.last)));
  return true;
}

void TriggerResolver::AnswerUnknown(const Job& job, const std::string& why) {
  const absl::Time now = clock_.Now();
  for (int64_t id : job.run_ids) answers_(UnknownOutcome(id, job.error, why, now));
  if (options_.on_settled) options_.on_settled("unknown", job.run_ids.size());
}

}  // namespace jobwheel::dispatcher
