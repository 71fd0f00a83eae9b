// Two real registry replicas on the real test PostgreSQL, real heartbeat
// clients connected to replica A, and a WatchExecutors stream on replica B:
// measures how fast B sees executors go offline (kill -9, SIGSTOP, graceful
// SIGTERM), how they come back through B when A dies, and that a dead replica's
// leases expire.

#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/auth/bearer.h"
#include "common/grpc/grpc_server.h"
#include "common/testing/process.h"
#include "common/testing/stack.h"
#include "common/time/clock.h"
#include "gtest/gtest.h"
#include "jobwheel/v1/registry.grpc.pb.h"

namespace jobwheel::testing {
namespace {

constexpr char kApp[] = "failover";

absl::Time Now() { return RealClock::Get().Now(); }

// A fresh random token (64 hex digits).
std::string RandomToken() {
  std::random_device random;
  std::string token;
  for (int i = 0; i < 8; ++i) token += absl::StrFormat("%08x", random());
  return token;
}

// The at_us of the first line of `log` starting with `prefix`, or -1.
int64_t EventTime(const std::string& log, absl::string_view prefix) {
  for (absl::string_view line : absl::StrSplit(log, '\n')) {
    if (!absl::StartsWith(line, prefix)) continue;
    const size_t at = line.rfind("at_us=");
    int64_t us = -1;
    if (at != absl::string_view::npos && absl::SimpleAtoi(line.substr(at + 6), &us)) return us;
  }
  return -1;
}

// Whether `pid` is running (not exited, not a zombie), without reaping it.
bool ProcessAlive(pid_t pid) {
  std::ifstream stat(absl::StrCat("/proc/", pid, "/stat"));
  if (!stat) return false;
  std::string content((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const size_t paren = content.rfind(')');
  if (paren == std::string::npos || paren + 2 >= content.size()) return false;
  const char state = content[paren + 2];
  return state != 'Z' && state != 'X';
}

// A WatchExecutors stream on one replica, applied to a map, recording when each
// address was last upserted/removed. Checks the protocol on the way: a snapshot
// first, then strictly increasing versions.
class Watcher {
 public:
  struct Entry {
    bool online = false;
    std::string replica;
    absl::Time upserted_at;
    absl::Time removed_at;
    bool alive_when_removed = false;  // Per the watched pid (see WatchPid).
  };

  // `token`: what a dispatcher presents (signed with its key for audience "registry").
  Watcher(const std::string& target, const std::string& app, const std::string& token) {
    auto channel = MakeChannel(target);
    stub_ = v1::RegistryService::NewStub(*channel);
    AddBearer(ctx_, token);
    v1::WatchExecutorsRequest req;
    req.set_app(app);
    reader_ = stub_->WatchExecutors(&ctx_, req);
    thread_ = std::thread([this] { Loop(); });
  }

  ~Watcher() {
    ctx_.TryCancel();
    thread_.join();
  }

  // When `address` is removed, record whether `pid` was still alive at that
  // moment.
  void WatchPid(const std::string& address, pid_t pid) {
    absl::MutexLock lock(&mu_);
    pids_[address] = pid;
  }

  bool WaitFor(const std::function<bool(const std::map<std::string, Entry>&)>& pred,
               absl::Duration timeout) {
    absl::MutexLock lock(&mu_);
    auto cond = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return pred(entries_) || ended_; };
    mu_.AwaitWithTimeout(absl::Condition(&cond), timeout);
    return pred(entries_);
  }

  bool WaitOffline(const std::string& address, absl::Duration timeout) {
    return WaitFor(
        [&](const std::map<std::string, Entry>& m) {
          auto it = m.find(address);
          return it != m.end() && !it->second.online;
        },
        timeout);
  }

  Entry Get(const std::string& address) {
    absl::MutexLock lock(&mu_);
    return entries_[address];
  }

  std::string protocol_error() {
    absl::MutexLock lock(&mu_);
    return protocol_error_;
  }

 private:
  void Loop() {
    v1::WatchExecutorsResponse event;
    bool first = true;
    int64_t last_version = 0;
    while (reader_->Read(&event)) {
      const absl::Time now = Now();
      absl::MutexLock lock(&mu_);
      if (first != (event.type() == v1::WATCH_EVENT_TYPE_SNAPSHOT)) {
        protocol_error_ = absl::StrCat("unexpected event type ", event.type());
      }
      if (!first && event.version() <= last_version) {
        protocol_error_ = absl::StrCat("version ", event.version(), " after ", last_version);
      }
      first = false;
      last_version = event.version();
      for (const v1::Executor& e : event.executors()) {
        Entry& entry = entries_[e.address()];
        if (event.type() == v1::WATCH_EVENT_TYPE_REMOVE) {
          entry.online = false;
          entry.removed_at = now;
          auto pid = pids_.find(e.address());
          entry.alive_when_removed = pid != pids_.end() && ProcessAlive(pid->second);
        } else {
          entry.online = true;
          entry.replica = e.registry_replica();
          entry.upserted_at = now;
        }
      }
    }
    absl::MutexLock lock(&mu_);
    ended_ = true;
  }

  std::unique_ptr<v1::RegistryService::Stub> stub_;
  grpc::ClientContext ctx_;
  std::unique_ptr<grpc::ClientReader<v1::WatchExecutorsResponse>> reader_;
  std::thread thread_;
  absl::Mutex mu_;
  std::map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, pid_t> pids_ ABSL_GUARDED_BY(mu_);
  std::string protocol_error_ ABSL_GUARDED_BY(mu_);
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
};

class RegistryFailoverTest : public ::testing::Test {
 protected:
  // Registry replicas A and B on one fresh database, a 2 s lease and a 1 s drain grace; no
  // dispatcher or scheduler. The executors are heartbeat clients started by each test.
  void SetUp() override {
    executor_token_ = RandomToken();
    Stack::Options o;
    o.migrate_database = true;
    o.executor_token = executor_token_;
    o.registry.replicas = 2;
    o.registry.replica_ids = {"A", "B"};
    o.registry.extra_flags = {"--lease=2s", "--drain_grace=1s"};
    o.dispatcher.replicas = 0;
    o.scheduler.replicas = 0;
    stack_ = std::make_unique<Stack>(std::move(o));
    absl::Status started = stack_->StartServices();
    ASSERT_TRUE(started.ok()) << started << "\n" << stack_->Logs();
    absl::Status app = stack_->EnsureApp(kApp);
    ASSERT_TRUE(app.ok()) << app << "\n" << stack_->Logs();
    wrong_token_ = WriteFile(stack_->dir() + "/wrong.token", "not-the-token\n");
  }

  void TearDown() override {
    if (HasFailure() && stack_ != nullptr) std::printf("%s\n", stack_->Logs().c_str());
    for (auto& c : clients_) Stack::KillProcess(*c);
    if (stack_ != nullptr) stack_->Stop();
  }

  StackProcess& replica_a() { return stack_->registry_process(0); }

  struct Client {
    Process* process = nullptr;
    std::string address;
    std::string log;
  };

  // A heartbeat client of app kApp advertising its own address, trying `registries` in order.
  Client StartClient(const std::string& name, const std::string& registries,
                     const std::string& token_file) {
    auto p = std::make_unique<StackProcess>();
    p->name = "client_" + name;
    p->binary = "tests/registry/heartbeat_client";
    p->serves = false;
    Client c;
    c.address = absl::StrCat("127.0.0.1:", 20000 + clients_.size());
    p->args = {"--registry=" + registries, "--app=" + std::string(kApp), "--address=" + c.address,
               "--token_file=" + token_file, "--exit_delay=300ms"};
    absl::Status s = stack_->Start(*p);
    EXPECT_TRUE(s.ok()) << s;
    c.process = p->proc.get();
    c.log = p->log;
    clients_.push_back(std::move(p));
    return c;
  }

  // A token as a dispatcher presents it to the registry.
  std::string DispatcherToken() const { return stack_->CallerToken("dispatcher", "registry"); }

  std::unique_ptr<Stack> stack_;
  std::string executor_token_, wrong_token_;
  std::vector<std::unique_ptr<StackProcess>> clients_;
};

TEST_F(RegistryFailoverTest, OfflineDetectionAndReplicaFailover) {
  const std::string a = stack_->registry(0), b = stack_->registry(1);
  Watcher watcher(b, kApp, DispatcherToken());
  std::vector<Client> clients;
  // c0: kill -9; c1: SIGSTOP; c2: SIGTERM; c3: knows only A; c4, c5: fail over
  // to B.
  for (int i = 0; i < 6; ++i) {
    clients.push_back(
        StartClient(absl::StrCat("c", i), i == 3 ? a : a + "," + b, stack_->executor_token_file()));
  }
  ASSERT_TRUE(watcher.WaitFor(
      [&](const std::map<std::string, Watcher::Entry>& m) {
        for (const Client& c : clients) {
          auto it = m.find(c.address);
          if (it == m.end() || !it->second.online || it->second.replica != "A") return false;
        }
        return true;
      },
      absl::Seconds(15)))
      << "not all clients visible on B through A";
  // Registered on A → visible on B (LISTEN/NOTIFY).
  std::vector<double> lags_ms;
  for (const Client& c : clients) {
    // B may see the row before the client has read the reply.
    int64_t registered_us = -1;
    ASSERT_TRUE(Eventually(
        [&] { return (registered_us = EventTime(ReadFile(c.log), "registered replica=A")) > 0; },
        absl::Seconds(5)))
        << c.log;
    lags_ms.push_back((absl::ToUnixMicros(watcher.Get(c.address).upserted_at) - registered_us) /
                      1000.0);
  }
  std::sort(lags_ms.begin(), lags_ms.end());
  std::printf("registered on A -> visible on B: median %.1f ms, max %.1f ms\n",
              lags_ms[lags_ms.size() / 2], lags_ms.back());
  EXPECT_LE(lags_ms[lags_ms.size() / 2], 100.0);

  // 1. kill -9: the stream closes, B sees the executor offline within 1 s.
  {
    Client& c = clients[0];
    const absl::Time t0 = Now();
    c.process->Signal(SIGKILL);
    ASSERT_TRUE(watcher.WaitOffline(c.address, absl::Seconds(5)));
    const absl::Duration took = watcher.Get(c.address).removed_at - t0;
    std::printf("kill -9 executor -> offline on B: %s\n", absl::FormatDuration(took).c_str());
    EXPECT_LE(took, absl::Seconds(1));
    EXPECT_TRUE(c.process->Wait(absl::Seconds(5)).ok());
  }

  // 2. SIGSTOP: nothing closes; the missed-beat deadline (3 s) takes it
  // offline.
  {
    Client& c = clients[1];
    const absl::Time t0 = Now();
    c.process->Signal(SIGSTOP);
    ASSERT_TRUE(watcher.WaitOffline(c.address, absl::Seconds(10)));
    const absl::Duration took = watcher.Get(c.address).removed_at - t0;
    std::printf("SIGSTOP executor -> offline on B: %s\n", absl::FormatDuration(took).c_str());
    EXPECT_LE(took, absl::Milliseconds(3500));
    // The last beat was at most 1 s before the stop, so anything under 2 s was
    // not the deadline.
    EXPECT_GE(took, absl::Seconds(2));
    // Resumed, it registers again (its stream was closed by the registry).
    c.process->Signal(SIGCONT);
    EXPECT_TRUE(watcher.WaitFor(
        [&](const std::map<std::string, Watcher::Entry>& m) { return m.at(c.address).online; },
        absl::Seconds(10)))
        << "SIGCONT'd executor did not come back";
  }

  // 3. SIGTERM: goodbye; B sees it offline while the process is still alive.
  {
    Client& c = clients[2];
    watcher.WatchPid(c.address, c.process->pid());
    const absl::Time t0 = Now();
    c.process->Signal(SIGTERM);
    ASSERT_TRUE(watcher.WaitOffline(c.address, absl::Seconds(5)));
    const Watcher::Entry e = watcher.Get(c.address);
    int exit_code = -1;
    ASSERT_TRUE(c.process->Wait(absl::Seconds(5), &exit_code).ok());
    EXPECT_EQ(exit_code, 0);
    const std::string log = ReadFile(c.log);
    const int64_t acked_us = EventTime(log, "goodbye_acked");
    const int64_t exiting_us = EventTime(log, "exiting");
    ASSERT_GT(acked_us, 0) << log;
    const int64_t removed_us = absl::ToUnixMicros(e.removed_at);
    std::printf(
        "SIGTERM executor -> offline on B: %s; goodbye acked %+.1f ms, "
        "exit %+.1f ms "
        "relative to the REMOVE\n",
        absl::FormatDuration(e.removed_at - t0).c_str(), (acked_us - removed_us) / 1000.0,
        (exiting_us - removed_us) / 1000.0);
    EXPECT_TRUE(e.alive_when_removed) << "REMOVE arrived after the process exited";
    EXPECT_LT(removed_us, exiting_us);
    // The REMOVE follows the goodbye (committed before the ack), not the exit
    // 300 ms later.
    EXPECT_LE(removed_us - acked_us, 100000);
  }

  // 4. Wrong token: refused UNAUTHENTICATED, on the heartbeat and on the watch.
  {
    auto stub = v1::RegistryService::NewStub(*MakeChannel(a));
    grpc::ClientContext ctx;
    AddBearer(ctx, "not-the-token");
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    auto stream = stub->Heartbeat(&ctx);
    v1::HeartbeatRequest req;
    req.mutable_register_()->set_app(kApp);
    req.mutable_register_()->set_address("127.0.0.1:29999");
    req.mutable_register_()->set_instance_id("wrong-token-instance-0001");
    stream->Write(req);
    v1::HeartbeatResponse resp;
    EXPECT_FALSE(stream->Read(&resp));
    EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::UNAUTHENTICATED);

    grpc::ClientContext wctx;
    AddBearer(wctx, executor_token_);  // The executor token is not a dispatcher's token.
    wctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    v1::WatchExecutorsRequest wreq;
    auto reader = stub->WatchExecutors(&wctx, wreq);
    v1::WatchExecutorsResponse wresp;
    EXPECT_FALSE(reader->Read(&wresp));
    EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::UNAUTHENTICATED);

    // A real client with the wrong token never shows up.
    Client bad = StartClient("bad", a, wrong_token_);
    EXPECT_TRUE(Eventually([&] { return ReadFile(bad.log).find("status=16") != std::string::npos; },
                           absl::Seconds(5)));
    EXPECT_EQ(watcher.Get(bad.address).upserted_at, absl::Time());
  }

  // 5. kill -9 replica A: its executors reconnect to B within 3 s; the one that
  // knows only
  //    A goes offline when its lease (2 s) expires on B.
  {
    std::vector<Client*> movers = {&clients[4], &clients[5]};
    for (Client* c : movers) ASSERT_EQ(watcher.Get(c->address).replica, "A");
    const absl::Time t0 = Now();
    replica_a().proc->Signal(SIGKILL);
    ASSERT_TRUE(watcher.WaitFor(
        [&](const std::map<std::string, Watcher::Entry>& m) {
          for (Client* c : movers) {
            const Watcher::Entry& e = m.at(c->address);
            if (!e.online || e.replica != "B") return false;
          }
          return true;
        },
        absl::Seconds(10)))
        << "executors did not move to B";
    absl::Duration slowest;
    for (Client* c : movers) {
      slowest = std::max(slowest, watcher.Get(c->address).upserted_at - t0);
    }
    std::printf("kill -9 replica A -> executors online through B: %s\n",
                absl::FormatDuration(slowest).c_str());
    EXPECT_LE(slowest, absl::Seconds(3));

    const Client& stranded = clients[3];
    ASSERT_TRUE(watcher.WaitOffline(stranded.address, absl::Seconds(10)));
    const absl::Duration expired = watcher.Get(stranded.address).removed_at - t0;
    std::printf("kill -9 replica A -> A-only executor offline on B (lease 2s): %s\n",
                absl::FormatDuration(expired).c_str());
    EXPECT_LE(expired, absl::Seconds(4));
    EXPECT_GE(expired, absl::Milliseconds(1000));  // Not before the lease could have run out.
  }
  EXPECT_EQ(watcher.protocol_error(), "");
}

// SIGTERM of a replica: DRAIN moves its executors to the other replica without
// a REMOVE.
TEST_F(RegistryFailoverTest, GracefulReplicaShutdownDrainsExecutorsToAnotherReplica) {
  const std::string a = stack_->registry(0), b = stack_->registry(1);
  Watcher watcher(b, kApp, DispatcherToken());
  std::vector<Client> clients;
  for (int i = 0; i < 3; ++i) {
    clients.push_back(
        StartClient(absl::StrCat("d", i), a + "," + b, stack_->executor_token_file()));
  }
  auto all_on = [&](const std::string& replica) {
    return [&clients, replica](const std::map<std::string, Watcher::Entry>& m) {
      for (const Client& c : clients) {
        auto it = m.find(c.address);
        if (it == m.end() || !it->second.online || it->second.replica != replica) return false;
      }
      return true;
    };
  };
  ASSERT_TRUE(watcher.WaitFor(all_on("A"), absl::Seconds(15)));
  const absl::Time t0 = Now();
  replica_a().proc->Signal(SIGTERM);
  ASSERT_TRUE(watcher.WaitFor(all_on("B"), absl::Seconds(5)));
  std::printf("SIGTERM replica A -> executors online through B: %s\n",
              absl::FormatDuration(Now() - t0).c_str());
  for (const Client& c : clients) {
    EXPECT_EQ(watcher.Get(c.address).removed_at, absl::Time()) << c.address << " flashed offline";
  }
  int exit_code = -1;
  ASSERT_TRUE(replica_a().proc->Wait(absl::Seconds(10), &exit_code).ok());
  EXPECT_EQ(exit_code, 0);
  for (const Client& c : clients) {
    EXPECT_NE(ReadFile(c.log).find("instruction kind=DRAIN"), std::string::npos) << c.log;
    EXPECT_TRUE(watcher.Get(c.address).online);
  }
  EXPECT_EQ(watcher.protocol_error(), "");
}

}  // namespace
}  // namespace jobwheel::testing
