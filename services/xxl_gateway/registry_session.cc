#include "services/xxl_gateway/registry_session.h"

#include <deque>
#include <utility>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/auth/bearer.h"
#include "common/time/proto_time.h"
#include "openssl/rand.h"
#include "spdlog/spdlog.h"

namespace jobwheel::xxl {

namespace v1 = jobwheel::v1;

std::string NewInstanceId() {
  unsigned char bytes[16];
  if (RAND_bytes(bytes, sizeof(bytes)) != 1) {
    absl::BitGen gen;
    for (unsigned char& b : bytes) b = absl::Uniform<unsigned char>(gen);
  }
  std::string id;
  for (unsigned char b : bytes) absl::StrAppendFormat(&id, "%02x", b);
  return id;
}

RegistrySession::RegistrySession(Options options, RegistryStubFactory stubs,
                                 std::function<void(v1::ExecutorBeat*)> fill_beat, Clock& clock)
    : options_(std::move(options)),
      stubs_(std::move(stubs)),
      fill_beat_(std::move(fill_beat)),
      clock_(clock) {}

RegistrySession::~RegistrySession() { Shutdown("gateway stopped"); }

void RegistrySession::Start() {
  absl::MutexLock lock(&mu_);
  if (thread_.joinable() || stop_ || options_.targets.empty()) return;
  thread_ = std::thread([this] { Loop(); });
}

absl::Status RegistrySession::AwaitFirstOutcome(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  clock_.AwaitWithDeadline(&mu_, absl::Condition(&outcome_), clock_.Now() + timeout);
  if (registered_) return absl::OkStatus();
  if (!last_error_.ok()) return last_error_;
  return absl::UnavailableError("the registry did not answer the registration in time");
}

void RegistrySession::Shutdown(const std::string& reason) {
  {
    absl::MutexLock lock(&mu_);
    if (!stop_) {
      stop_ = true;
      stop_reason_ = reason;
    }
  }
  if (thread_.joinable()) thread_.join();
}

bool RegistrySession::registered() const {
  absl::MutexLock lock(&mu_);
  return registered_;
}

absl::Status RegistrySession::last_error() const {
  absl::MutexLock lock(&mu_);
  return last_error_;
}

void RegistrySession::Loop() {
  size_t index = 0;
  absl::Duration backoff = absl::Milliseconds(100);
  absl::BitGen gen;
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      if (stop_) return;
    }
    const End end = RunSession(options_.targets[index++ % options_.targets.size()]);
    if (end == End::kStopped) return;
    absl::Duration delay = absl::ZeroDuration();
    if (end == End::kFailed) {
      delay = backoff * absl::Uniform(gen, 0.5, 1.0);
      backoff = std::min(backoff * 2, options_.max_backoff);
    } else {
      backoff = absl::Milliseconds(100);
      if (end == End::kWasRegistered) delay = backoff;
    }
    absl::MutexLock lock(&mu_);
    clock_.AwaitWithDeadline(&mu_, absl::Condition(&stop_), clock_.Now() + delay);
  }
}

RegistrySession::End RegistrySession::RunSession(const std::string& target) {
  auto stub = stubs_(target);
  if (stub == nullptr) return End::kFailed;
  grpc::ClientContext ctx;
  AddBearer(ctx, options_.token);
  {
    absl::MutexLock lock(&mu_);
    if (stop_) return End::kStopped;
    inbox_.clear();
    stream_done_ = false;
    ctx_ = &ctx;
  }
  auto stream = stub->Heartbeat(&ctx);
  std::thread reader([this, &stream] {
    v1::HeartbeatResponse r;
    while (stream->Read(&r)) {
      absl::MutexLock lock(&mu_);
      inbox_.push_back(std::move(r));
      r.Clear();
    }
    absl::MutexLock lock(&mu_);
    stream_done_ = true;
  });
  v1::HeartbeatRequest reg;
  *reg.mutable_register_() = options_.registration;
  bool writable = stream->Write(reg);
  bool registered = false;
  absl::Duration interval = absl::Seconds(1);
  absl::Time next_beat = absl::InfiniteFuture();
  const absl::Time register_deadline = clock_.Now() + options_.register_timeout;
  End end = End::kFailed;
  while (true) {
    std::deque<v1::HeartbeatResponse> batch;
    bool done, stop;
    std::string reason;
    {
      absl::MutexLock lock(&mu_);
      auto woken = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return !inbox_.empty() || stream_done_ || stop_ || !writable;
      };
      clock_.AwaitWithDeadline(&mu_, absl::Condition(&woken),
                               registered ? next_beat : register_deadline);
      batch.swap(inbox_);
      done = stream_done_;
      stop = stop_;
      reason = stop_reason_;
    }
    bool drain = false;
    for (const v1::HeartbeatResponse& r : batch) {
      if (r.has_registered()) {
        if (r.registered().has_beat_interval()) {
          const absl::Duration d = FromProto(r.registered().beat_interval());
          if (d > absl::ZeroDuration()) interval = d;
        }
        if (!registered) {
          spdlog::info("{} {} registered as {} (registry {})", options_.registration.app(),
                       options_.registration.labels().at("xxl.address"),
                       options_.registration.address(), target);
        }
        registered = true;
        next_beat = clock_.Now() + interval;
        absl::MutexLock lock(&mu_);
        registered_ = true;
        outcome_ = true;
        last_error_ = absl::OkStatus();
      } else if (r.has_instruction()) {
        if (r.instruction().kind() == v1::INSTRUCTION_KIND_REREGISTER) {
          writable = writable && stream->Write(reg);
        } else if (r.instruction().kind() == v1::INSTRUCTION_KIND_DRAIN) {
          drain = true;
        }
      }
    }
    if (stop) {
      end = End::kStopped;
      if (registered && writable && !done) {
        v1::HeartbeatRequest bye;
        bye.mutable_goodbye()->set_reason(reason);
        if (stream->Write(bye)) stream->WritesDone();
        absl::MutexLock lock(&mu_);
        clock_.AwaitWithDeadline(&mu_, absl::Condition(&stream_done_),
                                 clock_.Now() + absl::Seconds(3));
      }
      break;
    }
    if (drain) {
      stream->WritesDone();
      end = End::kDrained;
      break;
    }
    if (done || !writable) {
      end = registered ? End::kWasRegistered : End::kFailed;
      break;
    }
    if (!registered && clock_.Now() >= register_deadline) break;
    if (registered && clock_.Now() >= next_beat) {
      v1::HeartbeatRequest beat;
      fill_beat_(beat.mutable_beat());
      beat.mutable_beat()->set_seq(++seq_);
      writable = stream->Write(beat);
      next_beat = std::max(next_beat + interval, clock_.Now());
    }
  }
  bool done;
  {
    absl::MutexLock lock(&mu_);
    done = stream_done_;
    registered_ = false;
  }
  if (!done) ctx.TryCancel();
  reader.join();
  grpc::Status status = stream->Finish();
  absl::MutexLock lock(&mu_);
  ctx_ = nullptr;
  if (!status.ok() && end != End::kStopped) {
    last_error_ =
        absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
    // A refusal (not a transport failure) settles the first outcome.
    if (status.error_code() != grpc::StatusCode::UNAVAILABLE &&
        status.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED &&
        status.error_code() != grpc::StatusCode::CANCELLED) {
      outcome_ = true;
    }
    spdlog::warn("{} {}: heartbeat to {} ended: {}", options_.registration.app(),
                 options_.registration.address(), target, last_error_.ToString());
  }
  return end;
}

}  // namespace jobwheel::xxl
