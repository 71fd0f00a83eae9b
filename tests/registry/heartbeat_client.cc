// A minimal real executor for registry tests: speaks the Heartbeat protocol
// (register, beat at the interval the registry asks for, goodbye on SIGTERM),
// reconnecting over a list of registry addresses with jittered exponential
// backoff. Every registration carries one instance id (--instance_id, or a
// random one picked at start). Prints one line per event with a wall-clock
// timestamp (at_us) so tests can order what happened:
//   registered replica=<id> at_us=<t>
//   stream_ended status=<code> message=<text> at_us=<t>
//   instruction kind=<REREGISTER|DRAIN> at_us=<t>
//   goodbye_acked at_us=<t>
//   exiting at_us=<t>

#include <signal.h>

#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/random/random.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "common/auth/bearer.h"
#include "common/base/backoff.h"
#include "common/base/flags.h"
#include "common/grpc/grpc_server.h"
#include "common/time/clock.h"
#include "common/time/proto_time.h"
#include "jobwheel/v1/registry.grpc.pb.h"

ABSL_FLAG(std::string, registry, "127.0.0.1:7101", "Comma-separated registry addresses");
ABSL_FLAG(std::string, app, "demo", "App to register");
ABSL_FLAG(std::string, address, "127.0.0.1:7200", "Executor address to register");
ABSL_FLAG(std::string, handlers, "echo", "Comma-separated handler names");
ABSL_FLAG(std::string, token_file, "", "Executor token file");
ABSL_FLAG(absl::Duration, exit_delay, absl::ZeroDuration(),
          "How long to linger after the goodbye is acknowledged");
ABSL_FLAG(std::string, instance_id, "",
          "This process's instance id (the same on every reconnect); random when empty");

namespace jobwheel::testing {
namespace {

std::mutex mu;
std::condition_variable cv;
bool stop_requested = false;

absl::Time Now() { return RealClock::Get().Now(); }

int64_t NowUs() { return absl::ToUnixMicros(Now()); }

// Picked once per process.
const std::string& InstanceId() {
  static const std::string* id = [] {
    std::string flag = absl::GetFlag(FLAGS_instance_id);
    if (flag.empty()) {
      absl::BitGen gen;
      flag =
          absl::StrFormat("%016x%016x", absl::Uniform<uint64_t>(gen), absl::Uniform<uint64_t>(gen));
    }
    return new std::string(flag);
  }();
  return *id;
}

void Print(const std::string& line) {
  std::printf("%s at_us=%lld\n", line.c_str(), static_cast<long long>(NowUs()));
  std::fflush(stdout);
}

enum class Outcome { kGoodbyeDone, kStopped, kFailed, kDrain };

// One stream to one registry.
class Session {
 public:
  Session(v1::RegistryService::Stub& stub, const std::string& token) {
    AddBearer(ctx_, token);
    stream_ = stub.Heartbeat(&ctx_);
  }

  Outcome Run(bool* registered_out) {
    v1::HeartbeatRequest reg;
    auto* r = reg.mutable_register_();
    r->set_app(absl::GetFlag(FLAGS_app));
    r->set_address(absl::GetFlag(FLAGS_address));
    for (absl::string_view h :
         absl::StrSplit(absl::GetFlag(FLAGS_handlers), ',', absl::SkipEmpty())) {
      r->add_handlers(std::string(h));
    }
    r->set_sdk_version("heartbeat_client");
    r->set_capacity(1);
    r->set_instance_id(InstanceId());
    stream_->Write(reg);
    std::thread reader([this] { Read(); });

    absl::Duration interval = absl::Seconds(1);
    int64_t seq = 0;
    absl::Time next_beat = Now() + interval;
    Outcome outcome = Outcome::kFailed;
    std::unique_lock<std::mutex> lock(mu);
    while (true) {
      cv.wait_for(lock,
                  absl::ToChronoNanoseconds(std::max(absl::ZeroDuration(), next_beat - Now())));
      if (registered_ && interval_ != absl::ZeroDuration()) interval = interval_;
      *registered_out = registered_;
      if (ended_) break;
      if (stop_requested) {
        if (!registered_) {
          ctx_.TryCancel();
          outcome = Outcome::kStopped;
          break;
        }
        v1::HeartbeatRequest bye;
        bye.mutable_goodbye()->set_reason("SIGTERM");
        lock.unlock();
        stream_->Write(bye);
        stream_->WritesDone();
        lock.lock();
        cv.wait_for(lock, std::chrono::seconds(5), [this] { return ended_; });
        outcome = Outcome::kGoodbyeDone;
        if (!ended_) ctx_.TryCancel();
        break;
      }
      if (drain_) {
        ctx_.TryCancel();
        outcome = Outcome::kDrain;
        break;
      }
      if (reregister_) {
        reregister_ = false;
        lock.unlock();
        stream_->Write(reg);
        lock.lock();
      }
      if (registered_ && Now() >= next_beat) {
        v1::HeartbeatRequest beat;
        beat.mutable_beat()->set_seq(++seq);
        lock.unlock();
        stream_->Write(beat);
        lock.lock();
        next_beat = Now() + interval;
      } else if (Now() >= next_beat) {
        next_beat = Now() + interval;
      }
    }
    lock.unlock();
    reader.join();
    grpc::Status status = stream_->Finish();
    Print("stream_ended status=" + std::to_string(status.error_code()) +
          " message=" + status.error_message());
    if (outcome == Outcome::kGoodbyeDone && !status.ok()) outcome = Outcome::kFailed;
    return outcome;
  }

 private:
  void Read() {
    v1::HeartbeatResponse resp;
    while (stream_->Read(&resp)) {
      std::lock_guard<std::mutex> lock(mu);
      if (resp.has_registered()) {
        registered_ = true;
        interval_ = FromProto(resp.registered().beat_interval());
        Print("registered replica=" + resp.registered().replica_id());
      } else if (resp.has_instruction()) {
        const bool drain = resp.instruction().kind() == v1::INSTRUCTION_KIND_DRAIN;
        Print(std::string("instruction kind=") + (drain ? "DRAIN" : "REREGISTER"));
        if (drain) {
          drain_ = true;
        } else {
          reregister_ = true;
        }
      }
      cv.notify_all();
    }
    std::lock_guard<std::mutex> lock(mu);
    ended_ = true;
    cv.notify_all();
  }

  grpc::ClientContext ctx_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::HeartbeatRequest, v1::HeartbeatResponse>> stream_;
  // Guarded by mu.
  bool registered_ = false;
  bool ended_ = false;
  bool drain_ = false;
  bool reregister_ = false;
  absl::Duration interval_ = absl::ZeroDuration();
};

int Main() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::thread([signals] {
    int sig = 0;
    sigwait(&signals, &sig);
    std::lock_guard<std::mutex> lock(mu);
    stop_requested = true;
    cv.notify_all();
  }).detach();

  auto token = ReadTokenFile(absl::GetFlag(FLAGS_token_file), "--token_file");
  if (!token.ok()) {
    std::fprintf(stderr, "%s\n", token.status().ToString().c_str());
    return 2;
  }
  std::vector<std::unique_ptr<v1::RegistryService::Stub>> stubs;
  for (absl::string_view addr :
       absl::StrSplit(absl::GetFlag(FLAGS_registry), ',', absl::SkipEmpty())) {
    auto channel = MakeChannel(std::string(addr));
    if (!channel.ok()) {
      std::fprintf(stderr, "%s\n", channel.status().ToString().c_str());
      return 2;
    }
    stubs.push_back(v1::RegistryService::NewStub(*channel));
  }
  if (stubs.empty()) return 2;

  absl::BitGen gen;
  Backoff backoff(absl::Milliseconds(100), absl::Seconds(2));
  size_t index = 0;
  while (true) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (stop_requested) break;
    }
    bool registered = false;
    Session session(*stubs[index], *token);
    const Outcome outcome = session.Run(&registered);
    if (outcome == Outcome::kGoodbyeDone) {
      Print("goodbye_acked");
      RealClock::Get().SleepFor(absl::GetFlag(FLAGS_exit_delay));
      Print("exiting");
      return 0;
    }
    if (outcome == Outcome::kStopped) break;
    index = (index + 1) % stubs.size();
    if (outcome == Outcome::kDrain) continue;
    if (registered) backoff.Reset();
    const absl::Duration delay = backoff.Next(gen);
    std::unique_lock<std::mutex> lock(mu);
    cv.wait_for(lock, absl::ToChronoMilliseconds(delay), [] { return stop_requested; });
  }
  Print("exiting");
  return 0;
}

}  // namespace
}  // namespace jobwheel::testing

int main(int argc, char** argv) {
  jobwheel::ParseFlagsWithEnv(argc, argv, "heartbeat_client: a test executor for the registry");
  return jobwheel::testing::Main();
}
