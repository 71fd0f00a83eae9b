#include "services/xxl_gateway/identity_runs.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/model/proto_enums.h"
#include "common/time/proto_time.h"
#include "services/xxl_gateway/run_trigger.h"
#include "services/xxl_gateway/xxl_protocol.h"
#include "spdlog/spdlog.h"

namespace jobwheel::xxl {
namespace {

namespace v1 = jobwheel::v1;

v1::RunResponse Answer(v1::RunDisposition d, std::string message = "") {
  v1::RunResponse r;
  r.set_disposition(d);
  r.set_message(std::move(message));
  return r;
}

std::string BlockName(v1::BlockStrategy b) {
  switch (b) {
    case v1::BLOCK_STRATEGY_DISCARD_LATER:
      return "DISCARD_LATER";
    case v1::BLOCK_STRATEGY_COVER_EARLY:
      return "COVER_EARLY";
    default:
      return "SERIAL_EXECUTION";
  }
}

// The disposition a run already known here is answered with.
v1::RunResponse KnownAnswer(const RunRecord& r) {
  switch (r.state()) {
    case RUN_STATE_QUEUED:
      return Answer(v1::RUN_DISPOSITION_QUEUED, "already queued here");
    case RUN_STATE_RUNNING:
    case RUN_STATE_ENDED:
      return Answer(v1::RUN_DISPOSITION_STARTED, "already accepted here");
    case RUN_STATE_REFUSED:
      return Answer(r.status() == v1::RUN_STATUS_DISCARDED ? v1::RUN_DISPOSITION_DISCARDED
                                                           : v1::RUN_DISPOSITION_REJECTED,
                    r.message());
    case RUN_STATE_FENCED:
      return Answer(v1::RUN_DISPOSITION_REJECTED,
                    absl::StrCat("run ", r.run_id(), " was fenced here (GetRuns) and never runs"));
    default:
      return Answer(v1::RUN_DISPOSITION_REJECTED, "unknown state");
  }
}

}  // namespace

IdentityRuns::IdentityRuns(IdentityInfo info, IdentityRunsOptions options, RunLedger& ledger,
                           XxlClient& xxl, ResultSink& results, GatewayMetrics& metrics,
                           Clock& clock, Async async)
    : info_(std::move(info)),
      options_(options),
      ledger_(ledger),
      xxl_(xxl),
      results_(results),
      metrics_(metrics),
      clock_(clock),
      async_(std::move(async)) {}

int64_t IdentityRuns::NowMs() const { return absl::ToUnixMillis(clock_.Now()); }

void IdentityRuns::Restore() {
  std::vector<RunRecord> mine = ledger_.OfIdentity(info_.key);
  std::sort(mine.begin(), mine.end(), [](const RunRecord& a, const RunRecord& b) {
    return a.accept_ms() != b.accept_ms() ? a.accept_ms() < b.accept_ms() : a.run_id() < b.run_id();
  });
  absl::MutexLock lock(&mu_);
  for (const RunRecord& r : mine) {
    if (r.state() == RUN_STATE_RUNNING) lanes_[r.job_id()].running = r.run_id();
    if (r.state() == RUN_STATE_RUNNING || r.state() == RUN_STATE_QUEUED ||
        (r.state() == RUN_STATE_ENDED && !r.reported())) {
      open_.insert(r.run_id());
    }
  }
  for (const RunRecord& r : mine) {
    if (r.state() == RUN_STATE_QUEUED) lanes_[r.job_id()].queue.push_back(r.run_id());
  }
}

absl::StatusOr<v1::RunResponse> IdentityRuns::Submit(const v1::RunRequest& req) {
  if (req.run_id() <= 0) return absl::InvalidArgumentError("run_id: must be positive");
  if (req.job_id() <= 0) return absl::InvalidArgumentError("job_id: must be positive");
  auto reject = [&](std::string why) {
    metrics_.Run("rejected");
    return Answer(v1::RUN_DISPOSITION_REJECTED, std::move(why));
  };
  absl::StatusOr<Trigger> trigger =
      TriggerOf(req, info_.app, info_.instance, options_.allow_scripts);
  if (!trigger.ok()) return reject(std::string(trigger.status().message()));
  Trigger& t = *trigger;
  const absl::Duration timeout = FromProto(req.timeout());
  RunRecord record;
  std::vector<int64_t> covered;
  int64_t kill_job = 0;
  // A run answered without being sent (discarded, queued): the answer, once it is synced.
  std::optional<v1::RunResponse> early;
  {
    absl::MutexLock lock(&mu_);
    if (std::optional<RunRecord> known = ledger_.Get(req.run_id())) {
      if (known->identity() != info_.key) {
        return reject(absl::StrCat("run ", req.run_id(), " was given to another executor"));
      }
      return KnownAnswer(*known);
    }
    const int64_t now = NowMs();
    const int64_t spread =
        std::max<int64_t>(1, absl::ToInt64Milliseconds(options_.log_date_spread));
    t.log_date_time_ms = now - absl::Uniform<int64_t>(bitgen_, 0, spread);
    record.set_run_id(req.run_id());
    record.set_identity(info_.key);
    record.set_job_id(req.job_id());
    record.set_log_date_time_ms(t.log_date_time_ms);
    record.set_result_key(req.result_key());
    record.set_block_strategy(req.block_strategy());
    record.set_accept_ms(now);
    record.set_trigger_json(TriggerJson(t));
    if (t.timeout_s > 0) {
      record.set_deadline_ms(absl::ToInt64Milliseconds(timeout + options_.timeout_grace));
    }
    Lane& lane = lanes_[req.job_id()];
    const bool busy = lane.running != 0 || !lane.queue.empty();
    if (busy && req.block_strategy() == v1::BLOCK_STRATEGY_DISCARD_LATER) {
      record.set_state(RUN_STATE_REFUSED);
      record.set_status(v1::RUN_STATUS_DISCARDED);
      record.set_message(
          absl::StrCat("discarded (DISCARD_LATER): job ", req.job_id(), " is running here"));
      record.set_reported(true);
      ledger_.Stage(record);
      metrics_.Run("discarded");
      early = Answer(v1::RUN_DISPOSITION_DISCARDED, record.message());
    } else if (busy && req.block_strategy() == v1::BLOCK_STRATEGY_COVER_EARLY) {
      if (lane.running != 0) {
        covered.push_back(lane.running);
        kill_job = req.job_id();
      }
      covered.insert(covered.end(), lane.queue.begin(), lane.queue.end());
      lane.queue.clear();
      for (int64_t id : covered) {
        std::optional<RunRecord> old = ledger_.Get(id);
        if (!old.has_value()) continue;
        EndLocked(*old, v1::RUN_STATUS_KILLED, 0,
                  absl::StrCat("covered by run ", req.run_id(), " (COVER_EARLY)"));
      }
    } else if (busy) {
      record.set_state(RUN_STATE_QUEUED);
      ledger_.Stage(record);
      lane.queue.push_back(req.run_id());
      open_.insert(req.run_id());
      metrics_.Run("queued");
      early = Answer(v1::RUN_DISPOSITION_QUEUED,
                     absl::StrCat("queued behind run ", lane.running, " of job ", req.job_id()));
    }
    if (!early.has_value()) {
      record.set_state(RUN_STATE_RUNNING);
      record.set_start_ms(now);
      if (record.deadline_ms() > 0) record.set_deadline_ms(now + record.deadline_ms());
      lane.running = req.run_id();
      open_.insert(req.run_id());
      ledger_.Stage(record);
    }
  }
  if (early.has_value()) {
    // Synced outside mu_ like a run that is sent, so that other runs of this executor do not
    // wait for it; as before, a failed write does not change the answer.
    ledger_.Persist(req.run_id(), RunLedger::Durability::kSynced).IgnoreError();
    return *std::move(early);
  }
  // Recorded (synced, outside mu_ so that runs of this executor sync together) before it is
  // sent: never sent twice, even across a restart.
  const absl::Time sync_from = clock_.Now();
  absl::Status synced = ledger_.Persist(req.run_id(), RunLedger::Durability::kSynced);
  metrics_.Stage("sync", absl::ToDoubleSeconds(clock_.Now() - sync_from));
  if (absl::Status s = synced; !s.ok()) {
    absl::MutexLock lock(&mu_);
    Lane& lane = lanes_[req.job_id()];
    if (lane.running == req.run_id()) lane.running = 0;
    open_.erase(req.run_id());
    return absl::UnavailableError(absl::StrCat("run ", req.run_id(), ": ", s.message()));
  }
  if (kill_job != 0) KillOnXxl(kill_job);
  if (!covered.empty()) Report(covered).IgnoreError();
  v1::RunResponse response;
  absl::Status sent = SendRun(record, &response);
  if (sent.ok()) {
    metrics_.Run("started");
    return response;
  }
  if (absl::IsDeadlineExceeded(sent)) return sent;  // Maybe started: the ledger says RUNNING.
  {
    absl::MutexLock lock(&mu_);
    std::optional<RunRecord> r = ledger_.Get(req.run_id());
    if (r.has_value() && r->state() == RUN_STATE_RUNNING) {
      const bool discarded = response.disposition() == v1::RUN_DISPOSITION_DISCARDED;
      r->set_state(RUN_STATE_REFUSED);
      r->set_status(discarded ? v1::RUN_STATUS_DISCARDED : v1::RUN_STATUS_FAILED);
      r->set_message(std::string(sent.message()));
      r->set_reported(true);
      r->set_end_ms(NowMs());
      ledger_.Put(*r, RunLedger::Durability::kWritten).IgnoreError();
      Lane& lane = lanes_[req.job_id()];
      if (lane.running == req.run_id()) lane.running = 0;
      open_.erase(req.run_id());
    }
  }
  async_([this, job = req.job_id()] { StartNext(job); });
  metrics_.Run(response.disposition() == v1::RUN_DISPOSITION_DISCARDED ? "discarded" : "rejected");
  if (response.disposition() == v1::RUN_DISPOSITION_UNSPECIFIED) {
    response.set_disposition(v1::RUN_DISPOSITION_REJECTED);
  }
  response.set_message(std::string(sent.message()));
  return response;
}

absl::Status IdentityRuns::SendRun(const RunRecord& record, v1::RunResponse* response) {
  const absl::Time from = clock_.Now();
  auto body =
      xxl_.Post(info_.url, "/run", record.trigger_json(), info_.token, options_.call_timeout);
  metrics_.Stage("xxl_run", absl::ToDoubleSeconds(clock_.Now() - from));
  if (!body.ok()) {
    metrics_.XxlCall("run", "error");
    response->set_disposition(v1::RUN_DISPOSITION_REJECTED);
    if (absl::IsDeadlineExceeded(body.status())) return body.status();
    return absl::UnavailableError(
        absl::StrCat("XXL executor ", info_.url, " unreachable: ", body.status().message()));
  }
  auto reply = ParseReply(*body);
  if (!reply.ok()) {
    metrics_.XxlCall("run", "error");
    response->set_disposition(v1::RUN_DISPOSITION_REJECTED);
    return absl::InternalError(absl::StrCat("XXL executor /run: ", reply.status().message()));
  }
  metrics_.XxlCall("run", "ok");
  if (reply->code == 200 || absl::StrContains(reply->msg, "repeate trigger")) {
    response->set_disposition(v1::RUN_DISPOSITION_STARTED);
    return absl::OkStatus();
  }
  if (absl::StrContains(reply->msg, "Discard Later")) {
    response->set_disposition(v1::RUN_DISPOSITION_DISCARDED);
  } else {
    response->set_disposition(v1::RUN_DISPOSITION_REJECTED);
  }
  return absl::FailedPreconditionError(
      absl::StrCat("XXL executor refused the run (code ", reply->code, "): ", reply->msg));
}

void IdentityRuns::EndLocked(RunRecord& record, int status, int code, const std::string& message) {
  record.set_state(RUN_STATE_ENDED);
  record.set_status(status);
  record.set_code(code);
  record.set_message(message);
  record.set_end_ms(NowMs());
  record.set_reported(false);
  record.clear_trigger_json();
  ledger_.Put(record, RunLedger::Durability::kWritten).IgnoreError();
  Lane& lane = lanes_[record.job_id()];
  if (lane.running == record.run_id()) lane.running = 0;
  auto it = std::find(lane.queue.begin(), lane.queue.end(), record.run_id());
  if (it != lane.queue.end()) lane.queue.erase(it);
}

void IdentityRuns::StartNext(int64_t job_id) {
  while (true) {
    RunRecord next;
    {
      absl::MutexLock lock(&mu_);
      Lane& lane = lanes_[job_id];
      if (lane.running != 0 || lane.queue.empty()) return;
      const int64_t id = lane.queue.front();
      lane.queue.pop_front();
      std::optional<RunRecord> r = ledger_.Get(id);
      if (!r.has_value() || r->state() != RUN_STATE_QUEUED) continue;
      next = *r;
      const int64_t now = NowMs();
      next.set_state(RUN_STATE_RUNNING);
      next.set_start_ms(now);
      if (next.deadline_ms() > 0) next.set_deadline_ms(now + next.deadline_ms());
      lane.running = id;
      ledger_.Stage(next);
    }
    ledger_.Persist(next.run_id(), RunLedger::Durability::kSynced).IgnoreError();
    v1::RunResponse response;
    absl::Status sent = SendRun(next, &response);
    if (sent.ok() || absl::IsDeadlineExceeded(sent)) return;
    {
      absl::MutexLock lock(&mu_);
      std::optional<RunRecord> r = ledger_.Get(next.run_id());
      if (!r.has_value() || r->state() != RUN_STATE_RUNNING) continue;
      EndLocked(*r,
                response.disposition() == v1::RUN_DISPOSITION_DISCARDED ? v1::RUN_STATUS_DISCARDED
                                                                        : v1::RUN_STATUS_FAILED,
                500, std::string(sent.message()));
    }
    Report({next.run_id()}).IgnoreError();
  }
}

void IdentityRuns::KillOnXxl(int64_t job_id) {
  auto body = xxl_.Post(info_.url, "/kill", KillJson(static_cast<int32_t>(job_id)), info_.token,
                        options_.call_timeout);
  metrics_.XxlCall("kill", body.ok() ? "ok" : "error");
  if (!body.ok()) spdlog::warn("{}: /kill job {}: {}", info_.url, job_id, body.status().ToString());
}

v1::KillResponse IdentityRuns::Kill(int64_t run_id, const std::string& reason) {
  v1::KillResponse out;
  int64_t kill_job = 0;
  {
    absl::MutexLock lock(&mu_);
    std::optional<RunRecord> r = ledger_.Get(run_id);
    if (!r.has_value() || r->identity() != info_.key ||
        (r->state() != RUN_STATE_RUNNING && r->state() != RUN_STATE_QUEUED)) {
      out.set_killed(false);
      out.set_message(absl::StrCat("run ", run_id, " is not running or queued here"));
      return out;
    }
    if (r->state() == RUN_STATE_RUNNING) kill_job = r->job_id();
    const std::string why = reason.empty() ? "killed" : absl::StrCat("killed: ", reason);
    EndLocked(*r, v1::RUN_STATUS_KILLED, 0,
              kill_job != 0 ? why : absl::StrCat(why, " (while queued; it never ran)"));
  }
  if (kill_job != 0) {
    KillOnXxl(kill_job);
    async_([this, kill_job] { StartNext(kill_job); });
  }
  Report({run_id}).IgnoreError();
  out.set_killed(true);
  out.set_message(kill_job != 0 ? "killed on the XXL executor (/kill)" : "dropped from the queue");
  return out;
}

IdentityRuns::Load IdentityRuns::JobLoad(int64_t job_id) const {
  absl::MutexLock lock(&mu_);
  Load load;
  auto it = lanes_.find(job_id);
  if (it == lanes_.end()) return load;
  load.running = it->second.running != 0 ? 1 : 0;
  load.queued = static_cast<int>(it->second.queue.size());
  return load;
}

IdentityRuns::Load IdentityRuns::TotalLoad() const {
  absl::MutexLock lock(&mu_);
  Load load;
  for (const auto& [job, lane] : lanes_) {
    load.running += lane.running != 0 ? 1 : 0;
    load.queued += static_cast<int>(lane.queue.size());
  }
  return load;
}

std::vector<int64_t> IdentityRuns::RunningJobIds() const {
  absl::MutexLock lock(&mu_);
  std::vector<int64_t> out;
  for (const auto& [job, lane] : lanes_) {
    if (lane.running != 0) out.push_back(job);
  }
  return out;
}

absl::StatusOr<v1::LogResponse> IdentityRuns::Log(const v1::LogRequest& req) {
  std::optional<RunRecord> r = ledger_.Get(req.run_id());
  if (!r.has_value() || r->identity() != info_.key) {
    return absl::NotFoundError(absl::StrCat("run ", req.run_id(), ": no log here"));
  }
  const int from = std::max(1, req.from_line());
  const int max_lines = req.max_lines() > 0 ? std::min(req.max_lines(), 10000) : 1000;
  v1::LogResponse out;
  out.set_from_line(from);
  out.set_to_line(from - 1);
  if (r->state() == RUN_STATE_QUEUED || r->state() == RUN_STATE_REFUSED ||
      r->state() == RUN_STATE_FENCED) {
    return out;  // Never sent: no log yet.
  }
  auto body = xxl_.Post(info_.url, "/log", LogJson(r->run_id(), r->log_date_time_ms(), from),
                        info_.token, options_.call_timeout);
  metrics_.XxlCall("log", body.ok() ? "ok" : "error");
  if (!body.ok()) return absl::UnavailableError(body.status().message());
  auto result = ParseLogReply(*body);
  if (!result.ok()) return result.status();
  if (result->is_end() && absl::StrContains(result->log_content(), "logFile not exists")) {
    return out;
  }
  int n = 0;
  for (absl::string_view line : absl::StrSplit(result->log_content(), '\n')) {
    if (n >= max_lines) break;
    absl::ConsumeSuffix(&line, "\r");
    out.add_lines(std::string(line));
    ++n;
  }
  // A trailing newline leaves one empty piece that is no line.
  if (n > 0 && out.lines(n - 1).empty() && absl::EndsWith(result->log_content(), "\n")) {
    out.mutable_lines()->RemoveLast();
    --n;
  }
  out.set_to_line(from + n - 1);
  out.set_end(false);
  return out;
}

v1::GetRunsResponse IdentityRuns::GetRuns(const v1::GetRunsRequest& req) {
  v1::GetRunsResponse out;
  absl::MutexLock lock(&mu_);
  for (int64_t id : req.run_ids()) {
    v1::RunPresenceState* p = out.add_runs();
    p->set_run_id(id);
    std::optional<RunRecord> r = ledger_.Get(id);
    if (r.has_value() && r->identity() != info_.key) {
      p->set_presence(req.fence() ? v1::RUN_PRESENCE_FENCED : v1::RUN_PRESENCE_NOT_SEEN);
      continue;
    }
    if (!r.has_value()) {
      if (!req.fence()) {
        p->set_presence(v1::RUN_PRESENCE_NOT_SEEN);
        continue;
      }
      RunRecord fence;
      fence.set_run_id(id);
      fence.set_identity(info_.key);
      fence.set_state(RUN_STATE_FENCED);
      fence.set_accept_ms(NowMs());
      fence.set_reported(true);
      ledger_.Put(fence, RunLedger::Durability::kSynced).IgnoreError();
      p->set_presence(v1::RUN_PRESENCE_FENCED);
      continue;
    }
    switch (r->state()) {
      case RUN_STATE_QUEUED:
        p->set_presence(v1::RUN_PRESENCE_QUEUED);
        break;
      case RUN_STATE_RUNNING:
        p->set_presence(v1::RUN_PRESENCE_RUNNING);
        break;
      case RUN_STATE_ENDED:
        p->set_presence(v1::RUN_PRESENCE_ENDED);
        p->set_status(static_cast<v1::RunStatus>(r->status()));
        p->set_message(r->message());
        break;
      case RUN_STATE_REFUSED:
        p->set_presence(v1::RUN_PRESENCE_REFUSED);
        p->set_status(static_cast<v1::RunStatus>(r->status()));
        p->set_message(r->message());
        break;
      default:
        p->set_presence(v1::RUN_PRESENCE_FENCED);
        break;
    }
  }
  return out;
}

}  // namespace jobwheel::xxl
