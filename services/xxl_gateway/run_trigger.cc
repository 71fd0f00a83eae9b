#include "services/xxl_gateway/run_trigger.h"

#include <limits>

#include "absl/strings/str_cat.h"
#include "common/time/proto_time.h"

namespace jobwheel::xxl {

namespace v1 = jobwheel::v1;

absl::StatusOr<Trigger> TriggerOf(const v1::RunRequest& req, absl::string_view app,
                                  absl::string_view instance, bool allow_scripts) {
  if (req.app() != app) {
    return absl::FailedPreconditionError(
        absl::StrCat("run ", req.run_id(), " is for app \"", req.app(),
                     "\"; this executor registered for app \"", app, "\""));
  }
  if (req.executor_instance() != instance) {
    return absl::FailedPreconditionError(
        absl::StrCat("run ", req.run_id(), " is for executor instance \"", req.executor_instance(),
                     "\", not this one (\"", instance, "\")"));
  }
  if (req.job_id() > std::numeric_limits<int32_t>::max()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "job ", req.job_id(), ": XXL-JOB executors take job ids up to 2147483647 only"));
  }
  Trigger t;
  t.job_id = static_cast<int32_t>(req.job_id());
  t.handler = req.handler();
  t.params = req.param();
  t.block_strategy = "SERIAL_EXECUTION";  // The gateway's lanes decide; XXL never blocks.
  const absl::Duration timeout = FromProto(req.timeout());
  t.timeout_s =
      timeout > absl::ZeroDuration()
          ? static_cast<int32_t>(absl::ToInt64Seconds(absl::Ceil(timeout, absl::Seconds(1))))
          : 0;
  t.log_id = req.run_id();
  t.glue_source = req.script_source();
  t.glue_updatetime = req.script_version();
  t.broadcast_index = req.shard_total() > 0 ? req.shard_index() : 0;
  t.broadcast_total = req.shard_total() > 0 ? req.shard_total() : 1;
  switch (req.glue_type()) {
    case v1::GLUE_TYPE_UNSPECIFIED:
    case v1::GLUE_TYPE_HANDLER:
      t.glue_type = "BEAN";
      break;
    case v1::GLUE_TYPE_SCRIPT_SHELL:
    case v1::GLUE_TYPE_SCRIPT_PYTHON:
      if (!allow_scripts) {
        return absl::FailedPreconditionError(
            absl::StrCat("app ", app,
                         ": script jobs are not enabled for it on this gateway "
                         "(--script_apps)"));
      }
      t.glue_type = req.glue_type() == v1::GLUE_TYPE_SCRIPT_SHELL ? "GLUE_SHELL" : "GLUE_PYTHON";
      break;
    default:
      return absl::FailedPreconditionError(absl::StrCat(
          "glue type ", v1::GlueType_Name(req.glue_type()), " cannot run on an XXL-JOB executor"));
  }

  return t;
}

}  // namespace jobwheel::xxl
