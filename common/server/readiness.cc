#include "common/server/readiness.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace jobwheel {

absl::Status ReadinessOptions::Validate() const {
  if (db_check_interval <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--db_check_interval: must be positive");
  }
  if (db_check_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--db_check_timeout: must be positive");
  }
  if (drain_delay < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--drain_delay: must not be negative");
  }
  return absl::OkStatus();
}

Readiness::Readiness(Clock& clock, prometheus::Registry* metrics, const std::string& metric_prefix)
    : clock_(clock) {
  if (metrics == nullptr) return;
  ready_family_ = &prometheus::BuildGauge()
                       .Name(metric_prefix + "_ready")
                       .Help("1 when the readiness condition holds, 0 when it does not")
                       .Register(*metrics);
  serving_gauge_ = &prometheus::BuildGauge()
                        .Name(metric_prefix + "_serving")
                        .Help(
                            "1 when the health service answers SERVING (every condition "
                            "ready, not draining), 0 otherwise")
                        .Register(*metrics)
                        .Add({});
  serving_gauge_->Set(1);
}

Readiness::~Readiness() { Shutdown(); }

Readiness::Condition& Readiness::ConditionLocked(const std::string& name) {
  auto [it, inserted] = conditions_.try_emplace(name);
  if (inserted) {
    if (ready_family_ != nullptr) {
      it->second.gauge = &ready_family_->Add({{"condition", name}});
      it->second.gauge->Set(0);
    }
    PublishLocked();
  }
  return it->second;
}

void Readiness::AddCondition(const std::string& name) {
  absl::MutexLock lock(&mu_);
  ConditionLocked(name);
}

void Readiness::Set(absl::string_view name, bool ready, absl::string_view reason) {
  absl::MutexLock lock(&mu_);
  SetLocked(std::string(name), ready, reason);
}

void Readiness::SetLocked(const std::string& name, bool ready, absl::string_view reason) {
  Condition& c = ConditionLocked(name);
  const bool changed = c.ready != ready;
  c.ready = ready;
  c.reason = ready ? "" : std::string(reason);
  if (c.gauge != nullptr) c.gauge->Set(ready ? 1 : 0);
  if (changed) {
    if (ready && ReadyLocked()) {
      spdlog::info("readiness: {} ready", name);
    } else if (ready) {
      spdlog::info("readiness: {} ready, still NOT_SERVING ({})", name,
                   std::string(ReadyStatusLocked().message()));
    } else {
      spdlog::warn("readiness: {} not ready: {}", name, std::string(reason));
    }
  }
  PublishLocked();
}

void Readiness::AddPeriodicCheck(const std::string& name, Check check, absl::Duration interval,
                                 absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  ConditionLocked(name);
  auto p = std::make_unique<Periodic>();
  p->name = name;
  p->check = std::move(check);
  p->interval = interval;
  p->timeout = timeout;
  periodic_.push_back(std::move(p));
}

void Readiness::Start() {
  absl::MutexLock lock(&mu_);
  if (started_ || stopping_) return;
  started_ = true;
  for (auto& p : periodic_) {
    Periodic* raw = p.get();
    p->worker = std::thread([this, raw] { Worker(raw); });
    p->loop = std::thread([this, raw] { Loop(raw); });
  }
}

void Readiness::Loop(Periodic* p) {
  absl::MutexLock lock(&mu_);
  auto stopping = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_; };
  while (!stopping_) {
    // A check still running (hung) is awaited, not started a second time.
    if (p->finished == p->requested) ++p->requested;
    const uint64_t want = p->requested;
    auto answered = [this, p, want]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return stopping_ || p->finished >= want;
    };
    const bool in_time =
        clock_.AwaitWithDeadline(&mu_, absl::Condition(&answered), clock_.Now() + p->timeout);
    if (stopping_) break;
    if (!in_time) {
      SetLocked(p->name, false,
                absl::StrCat("check did not answer within ", absl::FormatDuration(p->timeout)));
    } else {
      SetLocked(p->name, p->result.ok(), p->result.ToString());
    }
    clock_.AwaitWithDeadline(&mu_, absl::Condition(&stopping), clock_.Now() + p->interval);
  }
}

void Readiness::Worker(Periodic* p) {
  mu_.Lock();
  uint64_t done = 0;
  while (true) {
    auto pending = [this, p, &done]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return stopping_ || p->requested > done;
    };
    mu_.Await(absl::Condition(&pending));
    if (stopping_) break;
    done = p->requested;
    mu_.Unlock();
    absl::Status result = p->check();
    mu_.Lock();
    p->result = std::move(result);
    p->finished = done;
  }
  mu_.Unlock();
}

void Readiness::Attach(grpc::HealthCheckServiceInterface* health,
                       std::vector<std::string> service_names) {
  absl::MutexLock lock(&mu_);
  health_ = health;
  service_names_ = std::move(service_names);
  if (health_ == nullptr) return;
  health_->SetServingStatus(kLivenessService, true);
  const bool ready = ReadyLocked();
  // The named services first, the overall one last.
  for (const std::string& s : service_names_) health_->SetServingStatus(s, ready);
  health_->SetServingStatus("", ready);
}

void Readiness::Drain(absl::string_view reason) {
  absl::MutexLock lock(&mu_);
  if (draining_) return;
  draining_ = true;
  drain_reason_ = std::string(reason);
  spdlog::info("readiness: draining ({})", drain_reason_);
  PublishLocked();
}

bool Readiness::draining() const {
  absl::MutexLock lock(&mu_);
  return draining_;
}

bool Readiness::ready() const {
  absl::MutexLock lock(&mu_);
  return ReadyLocked();
}

absl::Status Readiness::ReadyStatus() const {
  absl::MutexLock lock(&mu_);
  return ReadyStatusLocked();
}

absl::Status Readiness::ReadyStatusLocked() const {
  if (draining_) return absl::UnavailableError(absl::StrCat("draining: ", drain_reason_));
  for (const auto& [name, c] : conditions_) {
    if (!c.ready) return absl::UnavailableError(absl::StrCat(name, ": ", c.reason));
  }
  return absl::OkStatus();
}

bool Readiness::ReadyLocked() const {
  if (draining_) return false;
  for (const auto& [name, c] : conditions_) {
    if (!c.ready) return false;
  }
  return true;
}

void Readiness::PublishLocked() {
  const bool ready = ReadyLocked();
  if (serving_gauge_ != nullptr) serving_gauge_->Set(ready ? 1 : 0);
  if (ready == published_ready_) return;
  published_ready_ = ready;
  if (ready) {
    spdlog::info("readiness: SERVING");
  } else {
    spdlog::info("readiness: NOT_SERVING ({})", std::string(ReadyStatusLocked().message()));
  }
  if (health_ == nullptr) return;
  // The named services first, the overall one last.
  for (const std::string& s : service_names_) health_->SetServingStatus(s, ready);
  health_->SetServingStatus("", ready);
}

void Readiness::Shutdown() {
  std::vector<std::thread*> threads;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    for (auto& p : periodic_) {
      threads.push_back(&p->loop);
      threads.push_back(&p->worker);
    }
  }
  for (std::thread* t : threads) {
    if (t->joinable()) t->join();
  }
}

}  // namespace jobwheel
