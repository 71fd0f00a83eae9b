#include "services/dispatcher/dispatcher_options.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace jobwheel::dispatcher {
namespace {

using ::testing::HasSubstr;

std::string Invalid(const absl::Status& s) {
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  return std::string(s.message());
}

TEST(DispatcherOptionsTest, DefaultsAreValid) { EXPECT_TRUE(DispatcherOptions().Validate().ok()); }

TEST(DispatcherOptionsTest, OutOfRangeValuesNameTheirFlag) {
  auto with = [](auto change) {
    DispatcherOptions o;
    change(o);
    return o.Validate();
  };
  EXPECT_THAT(Invalid(with([](DispatcherOptions& o) { o.max_runs_per_batch = 0; })),
              HasSubstr("--max_runs_per_batch"));
  EXPECT_THAT(Invalid(with([](DispatcherOptions& o) { o.max_runs_per_batch = 1001; })),
              HasSubstr("--max_runs_per_batch"));
  EXPECT_TRUE(with([](DispatcherOptions& o) { o.max_runs_per_batch = 1000; }).ok());
  EXPECT_THAT(Invalid(with([](DispatcherOptions& o) { o.run_deadline = absl::ZeroDuration(); })),
              HasSubstr("--run_deadline"));
  EXPECT_THAT(Invalid(with([](DispatcherOptions& o) { o.trigger_tick = absl::Milliseconds(3); })),
              HasSubstr("--trigger_tick"));
  EXPECT_THAT(Invalid(with([](DispatcherOptions& o) { o.trigger_tick = absl::Milliseconds(200); })),
              HasSubstr("--trigger_tick"));
  EXPECT_TRUE(with([](DispatcherOptions& o) { o.trigger_tick = absl::ZeroDuration(); }).ok());
  EXPECT_THAT(Invalid(with([](DispatcherOptions& o) { o.max_trigger_hold = absl::Seconds(31); })),
              HasSubstr("--max_trigger_hold"));
  EXPECT_THAT(
      Invalid(with([](DispatcherOptions& o) { o.trigger_write_delay = absl::Seconds(-1); })),
      HasSubstr("--trigger_write_delay"));
  EXPECT_THAT(Invalid(with([](DispatcherOptions& o) { o.max_outcomes_per_write = 0; })),
              HasSubstr("max_outcomes_per_write"));
}

TEST(DispatcherOptionsTest, ServerOptionsNeedADatabaseARegistryAndCredentials) {
  DispatcherServerOptions o;
  EXPECT_THAT(Invalid(o.Validate()), HasSubstr("--db_dsn"));
  o.db_dsn = "dbname=jobwheel";
  EXPECT_THAT(Invalid(o.Validate()), HasSubstr("--registry_target"));
  o.registry_target = "127.0.0.1:7101";
  EXPECT_THAT(Invalid(o.Validate()), HasSubstr("--signing_key_file"));
  o.signing_key = "key";
  o.scheduler_public_keys = "keys";
  EXPECT_TRUE(o.Validate().ok());
  o.server_tls.cert_file = "cert.pem";
  EXPECT_THAT(Invalid(o.Validate()), HasSubstr("--tls_cert and --tls_key"));
  o.server_tls.key_file = "key.pem";
  o.db_pool_size = 0;
  EXPECT_THAT(Invalid(o.Validate()), HasSubstr("--db_pool_size"));
  o.db_pool_size = 4;
  o.probe_deadline = absl::ZeroDuration();
  EXPECT_THAT(Invalid(o.Validate()), HasSubstr("--probe_deadline"));
  o.probe_deadline = absl::Milliseconds(500);
  o.pools.fast_max_in_flight = 0;
  EXPECT_THAT(Invalid(o.Validate()), HasSubstr("--trigger_fast_max_in_flight"));
  o.pools.fast_max_in_flight = 4;
  o.pools.slow_max_in_flight = -1;
  EXPECT_THAT(Invalid(o.Validate()), HasSubstr("--trigger_slow_max_in_flight"));
  o.pools.slow_max_in_flight = 2;
  o.pools.max_waiting_runs = 0;
  EXPECT_THAT(Invalid(o.Validate()), HasSubstr("--trigger_max_waiting_runs"));
  o.pools.max_waiting_runs = 20;
  EXPECT_TRUE(o.Validate().ok());
  o.dispatcher.trigger_tick = absl::Milliseconds(7);  // The core's options are checked too.
  EXPECT_THAT(Invalid(o.Validate()), HasSubstr("--trigger_tick"));
}

}  // namespace
}  // namespace jobwheel::dispatcher
