// A trigger whose answer comes back later than the dispatcher's --run_deadline, with real
// processes: PostgreSQL, the registry, the dispatcher and a demo executor that the dispatcher
// reaches through a TCP proxy in this test, which holds the executor's bytes back while told
// to. The executor starts the run at once; its answer misses the deadline. The run must
// execute exactly once and end with the executor's real result (not FAILED by the trigger).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/auth/bearer.h"
#include "common/testing/executions.h"
#include "common/testing/process.h"
#include "common/testing/stack.h"
#include "common/time/clock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "jobwheel/v1/dispatcher.grpc.pb.h"
#include "jobwheel/v1/executor.grpc.pb.h"
#include "services/dispatcher/dispatch_test_util.h"
#include "tests/dispatcher/dispatch_as_scheduler.h"

namespace jobwheel::dispatcher {
namespace {

using ::jobwheel::testing::Eventually;
using ::jobwheel::testing::Stack;
using namespace ::jobwheel::dispatcher::testing;  // NOLINT

constexpr absl::Duration kStartTimeout = absl::Seconds(30);
constexpr absl::Duration kWait = absl::Seconds(60);

// Forwards 127.0.0.1:port() to a target port; the target's bytes back to the client are
// held `delay` (from when they are read) while slow. Each direction keeps its byte order.
class DelayProxy {
 public:
  explicit DelayProxy(int target_port) : target_port_(target_port) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    socklen_t len = sizeof(a);
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    ::listen(listen_fd_, 16);
    accept_thread_ = std::thread([this] { AcceptLoop(); });
  }
  ~DelayProxy() {
    stopping_ = true;
    ::shutdown(listen_fd_, SHUT_RDWR);
    accept_thread_.join();  // No connection is added from now on.
    {
      absl::MutexLock lock(&mu_);
      for (int fd : fds_) ::shutdown(fd, SHUT_RDWR);
    }
    for (std::thread& t : threads_) t.join();
    for (int fd : fds_) ::close(fd);
    ::close(listen_fd_);
  }
  int port() const { return port_; }
  void SetDelay(absl::Duration d) {
    absl::MutexLock lock(&mu_);
    delay_ = d;
  }

 private:
  struct Chunk {
    absl::Time due;
    std::string bytes;
  };
  struct Pipe {
    absl::Mutex mu;
    std::deque<Chunk> chunks;
    bool closed = false;
  };

  void AcceptLoop() {
    while (!stopping_) {
      int client = ::accept(listen_fd_, nullptr, nullptr);
      if (client < 0) return;
      int server = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      a.sin_port = htons(target_port_);
      if (::connect(server, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
        ::close(client);
        ::close(server);
        continue;
      }
      auto pipe = std::make_shared<Pipe>();
      absl::MutexLock lock(&mu_);
      fds_.push_back(client);
      fds_.push_back(server);
      threads_.emplace_back([client, server] { Forward(client, server); });
      threads_.emplace_back([this, client, server, pipe] { ReadBack(server, client, pipe); });
      threads_.emplace_back([client, pipe] { WriteBack(client, pipe); });
    }
  }
  static void Forward(int from, int to) {
    char buf[16384];
    while (true) {
      ssize_t n = ::read(from, buf, sizeof(buf));
      if (n <= 0 || !WriteAll(to, buf, n)) break;
    }
    ::shutdown(to, SHUT_WR);
  }
  void ReadBack(int from, int to, std::shared_ptr<Pipe> pipe) {
    char buf[16384];
    while (true) {
      ssize_t n = ::read(from, buf, sizeof(buf));
      if (n <= 0) break;
      absl::Duration delay;
      {
        absl::MutexLock lock(&mu_);
        delay = delay_;
      }
      absl::MutexLock lock(&pipe->mu);
      pipe->chunks.push_back(Chunk{RealClock::Get().Now() + delay, std::string(buf, n)});
    }
    absl::MutexLock lock(&pipe->mu);
    pipe->closed = true;
  }
  static void WriteBack(int to, std::shared_ptr<Pipe> pipe) {
    while (true) {
      Chunk c;
      {
        absl::MutexLock lock(&pipe->mu);
        auto ready = [&] { return pipe->closed || !pipe->chunks.empty(); };
        pipe->mu.Await(absl::Condition(&ready));
        if (pipe->chunks.empty()) break;
        c = std::move(pipe->chunks.front());
        pipe->chunks.pop_front();
      }
      // The delay is the point of this proxy: the bytes are held until due.
      RealClock::Get().SleepUntil(c.due);
      if (!WriteAll(to, c.bytes.data(), c.bytes.size())) break;
    }
    ::shutdown(to, SHUT_WR);
  }
  static bool WriteAll(int fd, const char* p, size_t n) {
    while (n > 0) {
      ssize_t w = ::write(fd, p, n);
      if (w <= 0) return false;
      p += w;
      n -= static_cast<size_t>(w);
    }
    return true;
  }

  const int target_port_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  absl::Mutex mu_;
  absl::Duration delay_ ABSL_GUARDED_BY(mu_) = absl::ZeroDuration();
  std::vector<int> fds_ ABSL_GUARDED_BY(mu_);
  std::thread accept_thread_;
  std::vector<std::thread> threads_ ABSL_GUARDED_BY(mu_);
};

class LostTriggerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::BitGen gen;
    Stack::Options o;
    o.executor_token = absl::StrCat("lt-executor-", absl::Hex(absl::Uniform<uint64_t>(gen)),
                                    absl::Hex(absl::Uniform<uint64_t>(gen)));
    // Trigger answers later than this are lost.
    o.dispatcher.extra_flags = {"--run_deadline=500ms"};
    o.scheduler.replicas = 0;  // The test plays the scheduler.
    o.serving_timeout = kStartTimeout;
    stack_ = std::make_unique<Stack>(std::move(o));
    ASSERT_TRUE(stack_->StartServices().ok()) << stack_->Logs();
    dsn_ = stack_->dsn();

    // The executor listens on its own port and registers the proxy's address: the dispatcher
    // reaches it only through the proxy.
    executor_.name = "slow-executor";
    executor_.binary = jobwheel::testing::kDemoExecutorBinary;
    executor_.port = jobwheel::testing::PickFreePort();
    proxy_ = std::make_unique<DelayProxy>(executor_.port);
    advertised_ = absl::StrCat("127.0.0.1:", proxy_->port());
    executions_file_ = stack_->dir() + "/slow-executor.executions";
    executor_.args = {"--listen=" + executor_.address(),
                      "--advertise_address=" + advertised_,
                      "--app=demo",
                      "--registry_target=" + stack_->registry(0),
                      "--dispatcher_target=" + stack_->dispatcher(0),
                      "--metrics_address=",
                      "--log_dir=" + stack_->dir() + "/slow-executor-logs",
                      "--spool_dir=" + stack_->dir() + "/slow-executor-spool",
                      "--executions_file=" + executions_file_,
                      "--executor_token_file=" + stack_->executor_token_file()};
    for (const std::string& f : stack_->ExecutorFlags()) executor_.args.push_back(f);
    ASSERT_TRUE(stack_->Start(executor_).ok()) << stack_->Logs();
    ASSERT_TRUE(stack_->WaitExecutorOnline("demo", advertised_, kStartTimeout).ok())
        << stack_->Logs();
    dispatcher_stub_ = v1::DispatcherService::NewStub(stack_->Channel(stack_->dispatcher(0)));
  }

  void TearDown() override {
    if (stack_ == nullptr) return;
    if (HasFailure()) std::cerr << stack_->Logs();
    Stack::StopProcess(executor_);
    stack_->Stop();
    proxy_.reset();
  }

  absl::StatusOr<v1::DispatchResponse> Dispatch(int64_t job_id, const std::string& handler,
                                                const std::string& param) {
    v1::DispatchRequest req;
    v1::Job job = MakeJob(job_id, "demo", handler, v1::ROUTING_STRATEGY_FIRST);
    job.set_param(param);
    *req.add_fires() = MakeFire(InsertFire(dsn_, job_id), job, RealClock::Get().Now());
    return DispatchAsScheduler(*stack_, *dispatcher_stub_, req, kStartTimeout);
  }

  std::vector<jobwheel::testing::Execution> Starts(int64_t job_id) {
    return jobwheel::testing::Starts(jobwheel::testing::ReadExecutions(executions_file_), job_id);
  }

  std::unique_ptr<Stack> stack_;
  std::string dsn_;
  std::unique_ptr<DelayProxy> proxy_;
  jobwheel::testing::StackProcess executor_;
  std::string advertised_;
  std::string executions_file_;
  std::unique_ptr<v1::DispatcherService::Stub> dispatcher_stub_;
};

TEST_F(LostTriggerTest, ASlowAnswerDoesNotFailTheRunAndItExecutesOnce) {
  // The dispatcher sees the executor (its first trigger is answered in time).
  const int64_t warm = InsertJob(dsn_, "demo", "echo", v1::ROUTING_STRATEGY_FIRST);
  ASSERT_TRUE(Eventually(
      [&] {
        auto r = Dispatch(warm, "echo", "warm");
        return r.ok() && r->outcomes(0).status() == v1::FIRE_STATUS_DISPATCHED &&
               r->outcomes(0).run_ids_size() == 1 &&
               Eventually(
                   [&] {
                     return RunById(dsn_, r->outcomes(0).run_ids(0)).status ==
                            v1::RUN_STATUS_SUCCEEDED;
                   },
                   absl::Seconds(5));
      },
      kStartTimeout));

  // From now on the executor's answers take 1.5 s to come back: past the 500 ms deadline.
  proxy_->SetDelay(absl::Milliseconds(1500));
  const int64_t job = InsertJob(dsn_, "demo", "sleep", v1::ROUTING_STRATEGY_FIRST);
  auto r = Dispatch(job, "sleep", "3000");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->outcomes(0).run_ids_size(), 1);
  const int64_t run_id = r->outcomes(0).run_ids(0);
  // The executor started it at once (the request went through undelayed).
  ASSERT_TRUE(Eventually([&] { return Starts(job).size() == 1; }, kWait)) << stack_->Logs();
  // Its later answers come back in time again (the lost one is still held back).
  proxy_->SetDelay(absl::ZeroDuration());

  // While the run sleeps it is never FAILED; it ends with the executor's own result.
  bool failed_seen = false;
  ASSERT_TRUE(Eventually(
      [&] {
        const RunRow row = RunById(dsn_, run_id);
        failed_seen = failed_seen || row.status == v1::RUN_STATUS_FAILED;
        return row.status == v1::RUN_STATUS_SUCCEEDED || failed_seen;
      },
      kWait));
  const RunRow row = RunById(dsn_, run_id);
  EXPECT_FALSE(failed_seen) << row.trigger_message;
  EXPECT_EQ(row.status, v1::RUN_STATUS_SUCCEEDED) << row.trigger_message;
  EXPECT_EQ(row.result_message, "slept 3000 ms");
  // The trigger's answer was indeed lost (settled by asking the executor, or left unknown).
  EXPECT_TRUE(row.trigger_message.find("trigger answer lost") != std::string::npos ||
              row.trigger_message.find("trigger answer unknown") != std::string::npos)
      << row.trigger_message;

  // A trigger of the same run sent again (as a retry after a lost answer would) is answered,
  // not executed.
  auto stub = v1::ExecutorService::NewStub(stack_->Channel(executor_.address()));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  AddBearer(ctx, stack_->ExecutorCallerToken("dispatcher", "demo", advertised_));
  auto instance = stack_->ExecutorInstance("demo", advertised_);
  ASSERT_TRUE(instance.ok()) << instance.status();
  v1::RunBatchRequest again;
  v1::RunRequest* run = again.add_runs();
  run->set_app("demo");
  run->set_executor_instance(*instance);
  run->set_run_id(run_id);
  run->set_job_id(job);
  run->set_handler("sleep");
  run->set_param("3000");
  v1::RunBatchResponse answer;
  grpc::Status s = stub->RunBatch(&ctx, again, &answer);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(answer.responses_size(), 1);
  EXPECT_NE(answer.responses(0).message().find("already ran"), std::string::npos)
      << answer.responses(0).message();

  // Exactly one execution on the executor, which ended well.
  const auto ends =
      jobwheel::testing::Ends(jobwheel::testing::ReadExecutions(executions_file_), job);
  EXPECT_EQ(Starts(job).size(), 1u);
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_TRUE(ends[0].ok);
  EXPECT_EQ(ends[0].run_id, run_id);
}

}  // namespace
}  // namespace jobwheel::dispatcher
