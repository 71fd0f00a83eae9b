// Behind a real PgBouncer (Debian's pgbouncer, 1.18) in front of the test PostgreSQL:
//  - in transaction mode the schedule lock refuses: ScheduleLock::TryAcquire and the
//    scheduler's elector answer FAILED_PRECONDITION naming PgBouncer, and no advisory lock
//    and no leadership epoch is left in the database (it never fires on a lock it does not
//    hold); through a session-mode pool the same lock is taken (no false alarm for a pool
//    that pins sessions);
//  - a registry and a dispatcher whose --db_dsn goes through the transaction-mode pool
//    (the dispatcher with --db_prepared_statements=false, the registry's LISTEN session on
//    PostgreSQL through --db_listen_dsn) serve a real job end to end:
//    triggered, run on a demo executor, SUCCEEDED; the scheduler stays on PostgreSQL itself.
// Skipped when pgbouncer is not installed (scripts/setup --test installs it).
#include <unistd.h>

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "common/testing/executions.h"
#include "common/testing/pg_test_db.h"
#include "common/testing/process.h"
#include "common/testing/stack.h"
#include "common/time/clock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "jobwheel/v1/job_admin.grpc.pb.h"
#include "pqxx/pqxx"
#include "services/scheduler/leader_elector.h"
#include "services/scheduler/schedule_lock.h"

namespace jobwheel {
namespace {

using testing::Eventually;

constexpr char kPgBouncer[] = "/usr/sbin/pgbouncer";
constexpr int64_t kKey = 0x6a77736368656431;

std::map<std::string, std::string> ParseDsn(const std::string& dsn) {
  std::map<std::string, std::string> out;
  for (absl::string_view kv : absl::StrSplit(dsn, ' ', absl::SkipEmpty())) {
    std::vector<std::string> p = absl::StrSplit(kv, absl::MaxSplits('=', 1));
    if (p.size() == 2) out[p[0]] = p[1];
  }
  return out;
}

// One PgBouncer in `mode` in front of the database of `dsn`.
class PgBouncer {
 public:
  absl::Status Start(const std::string& dsn, const std::string& mode) {
    const auto kv = ParseDsn(dsn);
    port_ = testing::PickFreePort();
    dbname_ = kv.at("dbname");
    // Under /var/tmp: as root, pgbouncer runs as postgres (-u), which cannot read a test's
    // directory under root's home.
    dir_ = absl::StrCat("/var/tmp/jobwheel-pgbouncer-", getpid(), "-", port_);
    mkdir(dir_.c_str(), 0755);
    const std::string ini = dir_ + "/pgbouncer.ini";
    std::ofstream(ini) << "[databases]\n"
                       << "* = host=" << kv.at("host") << " port=" << kv.at("port")
                       << " user=" << kv.at("user") << "\n"
                       << "[pgbouncer]\n"
                       << "listen_addr = 127.0.0.1\nlisten_port = " << port_ << "\n"
                       << "unix_socket_dir =\n"
                       << "auth_type = any\nadmin_users = postgres\n"
                       << "pool_mode = " << mode << "\n"
                       << "default_pool_size = 10\nmax_client_conn = 200\n"
                       << "ignore_startup_parameters = extra_float_digits\n";
    chmod(ini.c_str(), 0644);
    std::vector<std::string> args;
    if (getuid() == 0) args = {"-u", "postgres"};
    args.push_back(ini);
    if (absl::Status s = proc_.Start(kPgBouncer, args, dir_ + "/pgbouncer.log"); !s.ok()) return s;
    const bool up = Eventually(
        [&] {
          try {
            pqxx::connection c(this->dsn());
            pqxx::nontransaction(c).exec("SELECT 1");
            return true;
          } catch (const std::exception&) {
            return false;
          }
        },
        absl::Seconds(10));
    if (!up) return absl::UnavailableError("pgbouncer did not come up: " + ReadLog());
    return absl::OkStatus();
  }
  ~PgBouncer() {
    proc_.Kill();
    if (!dir_.empty()) std::system(("rm -rf " + dir_).c_str());
  }
  std::string dsn() const {
    return absl::StrCat("host=127.0.0.1 port=", port_, " user=postgres dbname=", dbname_);
  }
  std::string ReadLog() const { return testing::ReadFile(dir_ + "/pgbouncer.log"); }
  // Client connections to the pooled database (the admin console's SHOW CLIENTS); -1 when
  // the console does not answer.
  int Clients() const {
    const std::string command = absl::StrCat("psql -h 127.0.0.1 -p ", port_,
                                             " -U postgres -d pgbouncer -Atc 'SHOW CLIENTS' 2>&1");
    FILE* pipe = popen(command.c_str(), "r");
    if (pipe == nullptr) return -1;
    std::string out;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) out.append(buf, n);
    if (pclose(pipe) != 0) return -1;
    int clients = 0;
    for (absl::string_view line : absl::StrSplit(out, '\n', absl::SkipEmpty())) {
      std::vector<absl::string_view> f = absl::StrSplit(line, '|');
      if (f.size() > 2 && f[2] == dbname_) ++clients;
    }
    return clients;
  }

 private:
  testing::Process proc_;
  int port_ = 0;
  std::string dbname_, dir_;
};

class PgBouncerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (access(kPgBouncer, X_OK) != 0) {
      GTEST_SKIP() << kPgBouncer << " not installed (scripts/setup --test installs it)";
    }
    auto dsn = testing::CreateMigratedTestDatabase();
    ASSERT_TRUE(dsn.ok()) << dsn.status();
    dsn_ = *dsn;
  }

  int64_t Count(const std::string& sql) {
    pqxx::connection c(dsn_);
    pqxx::result r = pqxx::nontransaction(c).exec(sql);
    return r[0][0].is_null() ? 0 : r[0][0].as<int64_t>();
  }
  int64_t AdvisoryLocks() {
    return Count(
        absl::StrCat("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND "
                     "((classid::bigint << 32) | objid::bigint) = ",
                     kKey));
  }

  std::string dsn_;
};

TEST_F(PgBouncerTest, TransactionPoolingIsRefusedLeadershipNamingThePooler) {
  PgBouncer bouncer;
  ASSERT_TRUE(bouncer.Start(dsn_, "transaction").ok()) << bouncer.ReadLog();

  scheduler::ScheduleLock lock({bouncer.dsn(), kKey, "sched-pooled"});
  absl::StatusOr<scheduler::ScheduleLock::Acquired> acquired = lock.TryAcquire();
  ASSERT_FALSE(acquired.ok());
  EXPECT_EQ(acquired.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(absl::StrContains(acquired.status().message(), "PgBouncer")) << acquired.status();
  EXPECT_TRUE(absl::StrContains(acquired.status().message(), "pool_mode=transaction"));
  EXPECT_FALSE(lock.held());
  const absl::Status fenced = lock.Fence("fire", [](pqxx::work& tx) { tx.exec("SELECT 1"); });
  EXPECT_EQ(fenced.code(), absl::StatusCode::kFailedPrecondition) << fenced;

  // The scheduler's elector: not leader, GetLeader's answer names the pooler, and nothing
  // was taken or recorded in the database.
  scheduler::LeaderElector::Options options;
  options.dsn = bouncer.dsn();
  options.replica_id = "sched-pooled";
  options.retry_interval = absl::Milliseconds(100);
  scheduler::LeaderElector elector(options, {}, RealClock::Get());
  elector.Start();
  EXPECT_FALSE(elector.is_leader());
  absl::StatusOr<scheduler::LeaderInfo> leader = elector.Leader();
  ASSERT_FALSE(leader.ok());
  EXPECT_EQ(leader.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(absl::StrContains(leader.status().message(), "PgBouncer")) << leader.status();
  const absl::Status not_leader =
      elector.RunFenced("fire", [](pqxx::work& tx) { tx.exec("SELECT 1"); });
  EXPECT_EQ(not_leader.code(), absl::StatusCode::kFailedPrecondition);
  elector.Shutdown();
  EXPECT_EQ(AdvisoryLocks(), 0);
  EXPECT_EQ(Count("SELECT count(*) FROM leadership"), 0);
}

TEST_F(PgBouncerTest, SessionPoolingKeepsTheLock) {
  PgBouncer bouncer;
  ASSERT_TRUE(bouncer.Start(dsn_, "session").ok()) << bouncer.ReadLog();
  scheduler::ScheduleLock lock({bouncer.dsn(), kKey, "sched-session"});
  absl::StatusOr<scheduler::ScheduleLock::Acquired> acquired = lock.TryAcquire();
  ASSERT_TRUE(acquired.ok()) << acquired.status();
  EXPECT_TRUE(acquired->held);
  EXPECT_EQ(acquired->epoch, 1);
  EXPECT_TRUE(lock.Confirm().ok());
  EXPECT_TRUE(lock.Fence("fire", [](pqxx::work& tx) { tx.exec("SELECT 1"); }).ok());
  EXPECT_EQ(AdvisoryLocks(), 1);
  lock.Release();
  EXPECT_TRUE(Eventually([&] { return AdvisoryLocks() == 0; }, absl::Seconds(5)));
}

TEST_F(PgBouncerTest, RegistryAndDispatcherWorkBehindTransactionPooling) {
  PgBouncer bouncer;
  ASSERT_TRUE(bouncer.Start(dsn_, "transaction").ok()) << bouncer.ReadLog();
  testing::Stack::Options options;
  options.dsn = dsn_;  // The scheduler: PostgreSQL itself.
  options.executor_token = absl::StrCat("pooled-executor-", testing::PickFreePort());
  // Notifications do not pass a transaction-mode pool: the registry LISTENs on PostgreSQL.
  options.registry.extra_flags = {"--db_dsn=" + bouncer.dsn(), "--db_listen_dsn=" + dsn_};
  options.dispatcher.extra_flags = {"--db_dsn=" + bouncer.dsn(), "--db_prepared_statements=false"};
  testing::Stack stack(options);
  absl::Status started = stack.StartServices();
  ASSERT_TRUE(started.ok()) << started << "\n" << stack.Logs();
  auto executor = stack.AddExecutor({});
  ASSERT_TRUE(executor.ok()) << executor.status() << "\n" << stack.Logs();
  ASSERT_TRUE(stack.WaitLeader(0, absl::Seconds(20)).ok());

  auto admin = jobwheel::v1::JobAdminService::NewStub(stack.Channel(stack.scheduler(0)));
  auto ctx = [&] { return testing::Ctx(stack.admin_token()); };
  jobwheel::v1::CreateJobRequest create;
  create.mutable_job()->set_app("demo");
  create.mutable_job()->set_name("pooled");
  create.mutable_job()->set_handler("echo");
  create.mutable_job()->mutable_schedule()->mutable_none();
  create.mutable_job()->set_enabled(true);
  jobwheel::v1::CreateJobResponse job;
  grpc::Status s = admin->CreateJob(ctx().get(), create, &job);
  ASSERT_TRUE(s.ok()) << s.error_message();
  constexpr int kTriggers = 20;
  for (int i = 0; i < kTriggers; ++i) {
    jobwheel::v1::TriggerJobRequest trigger;
    trigger.set_id(job.job().id());
    jobwheel::v1::TriggerJobResponse fired;
    s = admin->TriggerJob(ctx().get(), trigger, &fired);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  const std::string succeeded =
      absl::StrCat("SELECT count(*) FROM runs WHERE status = 3 AND job_id = ", job.job().id());
  EXPECT_TRUE(Eventually([&] { return Count(succeeded) == kTriggers; }, absl::Seconds(30)))
      << Count(succeeded) << " of " << kTriggers << " runs SUCCEEDED\n"
      << stack.Logs();
  EXPECT_EQ(testing::Starts(stack.Executions(0), job.job().id()).size(),
            static_cast<size_t>(kTriggers));
  // The registry's and dispatcher's connections really are the pooler's clients.
  EXPECT_GE(bouncer.Clients(), 2) << bouncer.ReadLog();
  stack.Stop();
}

}  // namespace
}  // namespace jobwheel
