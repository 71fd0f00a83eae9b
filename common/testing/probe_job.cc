#include "common/testing/probe_job.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/testing/client_context.h"
#include "common/testing/executions.h"
#include "common/testing/process.h"
#include "pqxx/pqxx"

namespace jobwheel::testing {
namespace {

// Whether fire `fire_id` has left PENDING for DISPATCHED or FAILED.
bool HandedOff(pqxx::connection& db, int64_t fire_id) {
  pqxx::nontransaction tx(db);
  pqxx::result r = tx.exec(absl::StrCat("SELECT count(*) FROM fires WHERE id = ", fire_id,
                                        " AND status IN (", jobwheel::v1::FIRE_STATUS_DISPATCHED,
                                        ", ", jobwheel::v1::FIRE_STATUS_FAILED, ")"));
  return r[0][0].as<int64_t>() == 1;
}

}  // namespace

absl::StatusOr<int64_t> RouteProbeJob(const Stack& stack,
                                      jobwheel::v1::JobAdminService::Stub& admin,
                                      const std::vector<int>& executors,
                                      jobwheel::v1::RoutingStrategy routing,
                                      absl::Duration timeout) {
  auto ctx = [&stack] { return Ctx(stack.admin_token(), absl::Seconds(5)); };
  jobwheel::v1::CreateJobRequest create;
  create.mutable_job()->set_app("demo");
  create.mutable_job()->set_name("probe");
  create.mutable_job()->set_handler("echo");
  create.mutable_job()->mutable_schedule()->mutable_none();
  if (routing != jobwheel::v1::ROUTING_STRATEGY_UNSPECIFIED) {
    create.mutable_job()->set_routing_strategy(routing);
  }
  create.mutable_job()->set_enabled(true);
  jobwheel::v1::CreateJobResponse probe;
  grpc::Status s = admin.CreateJob(ctx().get(), create, &probe);
  if (!s.ok()) {
    return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                        absl::StrCat("CreateJob(probe): ", s.error_message()));
  }
  const int64_t job_id = probe.job().id();
  pqxx::connection db(stack.dsn());
  const bool routed = Eventually(
      [&] {
        bool all = true;
        for (int i : executors) all = all && !Starts(stack.Executions(i), job_id).empty();
        if (all) return true;
        jobwheel::v1::TriggerJobRequest trigger;
        trigger.set_id(job_id);
        jobwheel::v1::TriggerJobResponse fired;
        if (admin.TriggerJob(ctx().get(), trigger, &fired).ok()) {
          // This trigger's fire is handed off (dispatched or failed) before the next one.
          Eventually([&] { return HandedOff(db, fired.fire_id()); }, absl::Seconds(5));
        }
        return false;
      },
      timeout);
  if (!routed) {
    return absl::DeadlineExceededError(
        absl::StrCat("the dispatcher never routed the probe job to executors ",
                     absl::StrJoin(executors, ", "), " within ", absl::FormatDuration(timeout)));
  }
  return job_id;
}

}  // namespace jobwheel::testing
