#include "sdk/internal/heartbeat_client.h"

#include <algorithm>
#include <utility>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/auth/bearer.h"
#include "common/base/backoff.h"
#include "common/time/proto_time.h"
#include "openssl/rand.h"
#include "spdlog/spdlog.h"

namespace jobwheel::sdk {

using jobwheel::v1::HeartbeatRequest;
using jobwheel::v1::HeartbeatResponse;

namespace {

// 128 random bits as 32 hex digits, from the system's CSPRNG: with the app's token, the id is
// what lets a process take its own address back, so it must not be guessable.
HeartbeatOptions WithInstanceId(HeartbeatOptions options) {
  if (options.registration.instance_id().empty()) {
    options.registration.set_instance_id(NewInstanceId());
  }
  return options;
}

}  // namespace

std::string NewInstanceId() {
  unsigned char bytes[16];
  if (RAND_bytes(bytes, sizeof(bytes)) != 1) {
    absl::BitGen gen;  // Only if OpenSSL has no entropy source; still unique per process.
    for (unsigned char& b : bytes) b = absl::Uniform<unsigned char>(gen);
  }
  std::string id;
  for (unsigned char b : bytes) absl::StrAppendFormat(&id, "%02x", b);
  return id;
}

HeartbeatClient::HeartbeatClient(HeartbeatOptions options, RegistryStubFactory stub_factory,
                                 std::function<void(jobwheel::v1::ExecutorBeat*)> fill_beat,
                                 ExecutorMetrics& metrics, Clock& clock)
    : options_(WithInstanceId(std::move(options))),
      stub_factory_(std::move(stub_factory)),
      fill_beat_(std::move(fill_beat)),
      metrics_(metrics),
      clock_(clock) {}

HeartbeatClient::~HeartbeatClient() { Shutdown("executor destroyed"); }

void HeartbeatClient::Start() {
  absl::MutexLock lock(&mu_);
  if (thread_.joinable() || goodbye_ || options_.targets.empty()) return;
  thread_ = std::thread([this] { Loop(); });
}

void HeartbeatClient::Shutdown(const std::string& reason) {
  {
    absl::MutexLock lock(&mu_);
    if (!goodbye_) {
      goodbye_ = true;
      goodbye_reason_ = reason;
    }
    // Bounded: a stream stuck in a write is cancelled.
    const absl::Time deadline = clock_.Now() + options_.goodbye_timeout + absl::Seconds(1);
    auto loop_done = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return loop_done_; };
    if (thread_.joinable() &&
        !clock_.AwaitWithDeadline(&mu_, absl::Condition(&loop_done), deadline)) {
      abort_ = true;
      if (session_ctx_ != nullptr) session_ctx_->TryCancel();
    }
  }
  if (thread_.joinable()) thread_.join();
}

bool HeartbeatClient::registered() const {
  absl::MutexLock lock(&mu_);
  return registered_;
}

int64_t HeartbeatClient::registrations() const {
  absl::MutexLock lock(&mu_);
  return registrations_;
}

std::string HeartbeatClient::current_target() const {
  absl::MutexLock lock(&mu_);
  return current_target_;
}

void HeartbeatClient::Loop() {
  size_t index = 0;
  Backoff backoff(options_.initial_backoff, options_.max_backoff);
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      if (goodbye_) break;
    }
    const std::string& target = options_.targets[index % options_.targets.size()];
    const SessionEnd end = RunSession(target);
    if (end == SessionEnd::kStopped) break;
    ++index;
    absl::MutexLock lock(&mu_);
    absl::Duration delay;
    if (end == SessionEnd::kDrained) {
      delay = absl::ZeroDuration();
      backoff.Reset();
    } else if (end == SessionEnd::kWasRegistered) {
      // About initial_backoff, and a failure right after starts from there again.
      backoff.Reset();
      delay = backoff.Next(bitgen_);
      backoff.Reset();
    } else {
      delay = backoff.Next(bitgen_);
    }
    const absl::Time until = clock_.Now() + delay;
    clock_.AwaitWithDeadline(&mu_, absl::Condition(&goodbye_), until);
  }
  absl::MutexLock lock(&mu_);
  loop_done_ = true;
}

HeartbeatClient::SessionEnd HeartbeatClient::RunSession(const std::string& target) {
  std::unique_ptr<jobwheel::v1::RegistryService::StubInterface> stub = stub_factory_(target);
  if (stub == nullptr) return SessionEnd::kFailed;
  grpc::ClientContext ctx;
  AddBearer(ctx, options_.executor_token);
  {
    absl::MutexLock lock(&mu_);
    if (goodbye_) return SessionEnd::kStopped;
    inbox_.clear();
    stream_done_ = false;
    session_ctx_ = &ctx;
    current_target_ = target;
  }
  std::unique_ptr<grpc::ClientReaderWriterInterface<HeartbeatRequest, HeartbeatResponse>> stream =
      stub->Heartbeat(&ctx);
  std::thread reader([this, &stream] {
    HeartbeatResponse response;
    while (stream->Read(&response)) {
      absl::MutexLock lock(&mu_);
      inbox_.push_back(std::move(response));
      response.Clear();
    }
    absl::MutexLock lock(&mu_);
    stream_done_ = true;
  });

  HeartbeatRequest reg;
  *reg.mutable_register_() = options_.registration;
  bool writable = stream->Write(reg);
  bool registered = false;
  absl::Duration interval = options_.default_beat_interval;
  absl::Time next_beat = absl::InfiniteFuture();
  const absl::Time register_deadline = clock_.Now() + options_.register_timeout;
  SessionEnd end = SessionEnd::kFailed;
  bool said_goodbye = false;

  while (true) {
    std::deque<HeartbeatResponse> batch;
    bool done = false;
    bool goodbye = false;
    std::string reason;
    {
      absl::MutexLock lock(&mu_);
      const absl::Time wake = registered ? next_beat : register_deadline;
      auto woken = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return !inbox_.empty() || stream_done_ || (goodbye_ && !said_goodbye) || !writable;
      };
      clock_.AwaitWithDeadline(&mu_, absl::Condition(&woken), wake);
      batch.swap(inbox_);
      done = stream_done_;
      goodbye = goodbye_ && !said_goodbye;
      reason = goodbye_reason_;
    }
    bool drain = false;
    for (const HeartbeatResponse& r : batch) {
      switch (r.kind_case()) {
        case HeartbeatResponse::kRegistered: {
          const bool first = !registered;
          registered = true;
          if (r.registered().has_beat_interval()) {
            absl::Duration d = FromProto(r.registered().beat_interval());
            if (d > absl::ZeroDuration()) interval = d;
          }
          next_beat = clock_.Now() + interval;
          {
            absl::MutexLock lock(&mu_);
            registered_ = true;
            ++registrations_;
          }
          metrics_.heartbeat_connected.Set(1);
          if (first) {
            spdlog::info("registered with registry {} (replica {}), beat every {}", target,
                         r.registered().replica_id(), absl::FormatDuration(interval));
          }
          break;
        }
        case HeartbeatResponse::kAck:
          break;
        case HeartbeatResponse::kInstruction:
          if (r.instruction().kind() == jobwheel::v1::INSTRUCTION_KIND_REREGISTER) {
            spdlog::info("registry {} asks to re-register: {}", target, r.instruction().reason());
            writable = writable && stream->Write(reg);
          } else if (r.instruction().kind() == jobwheel::v1::INSTRUCTION_KIND_DRAIN) {
            spdlog::info("registry {} is draining ({}); moving to another replica", target,
                         r.instruction().reason());
            drain = true;
          }
          break;
        default:
          break;
      }
    }
    if (goodbye) {
      said_goodbye = true;
      end = SessionEnd::kStopped;
      if (registered && writable && !done) SayGoodbye(*stream, target, reason);
      break;
    }
    if (drain) {
      stream->WritesDone();
      end = SessionEnd::kDrained;
      break;
    }
    if (done || !writable) {
      end = registered ? SessionEnd::kWasRegistered : SessionEnd::kFailed;
      break;
    }
    if (!registered && clock_.Now() >= register_deadline) {
      spdlog::warn("registry {}: no `registered` reply within {}; reconnecting", target,
                   absl::FormatDuration(options_.register_timeout));
      break;
    }
    if (registered && clock_.Now() >= next_beat) {
      HeartbeatRequest beat;
      fill_beat_(beat.mutable_beat());
      {
        absl::MutexLock lock(&mu_);
        beat.mutable_beat()->set_seq(++seq_);
      }
      writable = stream->Write(beat);
      next_beat += interval;
      const absl::Time now = clock_.Now();
      if (next_beat < now) next_beat = now + interval;
    }
  }

  bool done;
  {
    absl::MutexLock lock(&mu_);
    done = stream_done_;
    registered_ = false;
  }
  metrics_.heartbeat_connected.Set(0);
  if (!done) ctx.TryCancel();
  reader.join();
  grpc::Status status = stream->Finish();
  {
    absl::MutexLock lock(&mu_);
    session_ctx_ = nullptr;
    current_target_.clear();
  }
  LogSessionEnd(end, status, target);
  return end;
}

void HeartbeatClient::SayGoodbye(HeartbeatStream& stream, const std::string& target,
                                 const std::string& reason) {
  HeartbeatRequest bye;
  bye.mutable_goodbye()->set_reason(reason);
  if (stream.Write(bye)) stream.WritesDone();
  // The registry closes the stream once it has taken the executor offline.
  absl::MutexLock lock(&mu_);
  const absl::Time deadline = clock_.Now() + options_.goodbye_timeout;
  auto closed = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stream_done_ || abort_; };
  if (!clock_.AwaitWithDeadline(&mu_, absl::Condition(&closed), deadline)) {
    spdlog::warn("registry {} did not close the stream within {} after goodbye", target,
                 absl::FormatDuration(options_.goodbye_timeout));
  }
}

void HeartbeatClient::LogSessionEnd(SessionEnd end, const grpc::Status& status,
                                    const std::string& target) {
  if (end == SessionEnd::kStopped) {
    spdlog::info("heartbeat stream to {} closed after goodbye", target);
  } else {
    // While the registry is down every attempt fails: warn on the first and then rarely.
    const bool was_registered = end == SessionEnd::kWasRegistered || end == SessionEnd::kDrained;
    failures_in_a_row_ = was_registered ? 0 : failures_in_a_row_ + 1;
    const std::string why = status.ok()
                                ? "closed by the registry"
                                : absl::StrCat("code ", static_cast<int>(status.error_code()), ": ",
                                               status.error_message());
    if (was_registered || failures_in_a_row_ == 1 || failures_in_a_row_ % 50 == 0) {
      spdlog::warn("heartbeat stream to {} ended ({}); {} failed attempt(s) in a row; reconnecting",
                   target, why, failures_in_a_row_);
    } else {
      spdlog::debug("heartbeat stream to {} ended ({})", target, why);
    }
  }
}

}  // namespace jobwheel::sdk
