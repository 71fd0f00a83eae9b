#include "services/scheduler/scheduler_server_options.h"

#include <functional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace jobwheel::scheduler {
namespace {

SchedulerServerOptions Valid() {
  SchedulerServerOptions c;
  c.listen = "127.0.0.1:7100";
  c.db_dsn = "host=a,b port=5432,5432 target_session_attrs=read-write";
  c.dispatcher_target = "127.0.0.1:7102";
  c.admin_token = "admin-token-0123456789";
  c.signing_key = "-----BEGIN PRIVATE KEY-----";
  return c;
}

TEST(SchedulerServerOptions, TheDefaultsWithADsnAndCredentialsAreValid) {
  EXPECT_TRUE(Valid().Validate().ok()) << Valid().Validate();
  SchedulerServerOptions migrate;
  migrate.db_dsn = "host=pg";
  migrate.migrate_only = true;  // Needs only the database.
  EXPECT_TRUE(migrate.Validate().ok());
}

TEST(SchedulerServerOptions, EachBadValueNamesItsFlag) {
  struct Case {
    std::string flag;
    std::function<void(SchedulerServerOptions&)> spoil;
  };
  const std::vector<Case> cases = {
      {"--db_dsn", [](auto& c) { c.db_dsn.clear(); }},
      {"--listen", [](auto& c) { c.listen.clear(); }},
      {"--db_pool_size", [](auto& c) { c.db_pool_size = 1; }},
      {"--db_pool_size", [](auto& c) { c.db_pool_size = 1000; }},
      {"--dispatcher_target", [](auto& c) { c.dispatcher_target.clear(); }},
      {"--admin_token_file", [](auto& c) { c.admin_token.clear(); }},
      {"--signing_key_file", [](auto& c) { c.signing_key.clear(); }},
      {"--tls_key", [](auto& c) { c.tls.cert_file = "cert.pem"; }},
      {"--tls_client_key", [](auto& c) { c.tls_client_cert = "cert.pem"; }},
      {"--lock_retry_interval", [](auto& c) { c.elector.retry_interval = absl::ZeroDuration(); }},
      {"--leader_silence_takeover", [](auto& c) { c.elector.takeover_after = absl::Seconds(-1); }},
      {"--preread_window", [](auto& c) { c.engine.preread_window = absl::ZeroDuration(); }},
      {"--claim_ahead", [](auto& c) { c.engine.claim_ahead = absl::Seconds(-1); }},
      {"--dispatch_threads", [](auto& c) { c.engine.dispatch_threads = 0; }},
      {"--dispatch_threads", [](auto& c) { c.engine.dispatch_threads = 65; }},
      {"--dispatch_lead", [](auto& c) { c.engine.dispatch_lead = absl::Seconds(2); }},
      {"--misfire_threshold", [](auto& c) { c.engine.misfire_threshold = absl::ZeroDuration(); }},
      {"--lost_run_after", [](auto& c) { c.monitors.lost_after = absl::ZeroDuration(); }},
      {"--executor_offline_grace", [](auto& c) { c.monitors.offline_grace = absl::Seconds(-1); }},
      {"--restart_grace", [](auto& c) { c.monitors.restart_grace = absl::Seconds(-1); }},
      {"--retention_days", [](auto& c) { c.retention_days = 0; }},
      {"--audit_retention_days", [](auto& c) { c.audit_retention_days = 36501; }},
      {"--alarm_webhook_allowlist",
       [](auto& c) { c.alarm_webhook_url = "https://alarms.example/hook"; }},
      {"--insecure_dev",
       [](auto& c) {
         c.insecure_dev = true;
         c.listen = "0.0.0.0:7100";
       }},
  };
  for (const Case& k : cases) {
    SchedulerServerOptions c = Valid();
    k.spoil(c);
    const absl::Status s = c.Validate();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << k.flag << ": " << s;
    EXPECT_TRUE(absl::StrContains(s.message(), k.flag)) << k.flag << ": " << s;
  }
}

}  // namespace
}  // namespace jobwheel::scheduler
