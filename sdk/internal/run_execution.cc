#include "sdk/internal/run_execution.h"

#include <exception>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/model/proto_enums.h"
#include "common/time/proto_time.h"
#include "sdk/internal/run_request.h"
#include "sdk/internal/script_environment.h"

namespace jobwheel::sdk {
namespace {

using jobwheel::v1::RunRequest;

Result ExecuteHandler(const RunState& run, const HandlerFn& handler) {
  const RunRequest& req = run.request;
  RunInfo info;
  info.job_id = req.job_id();
  info.run_id = req.run_id();
  info.fire_id = req.fire_id();
  info.handler = req.handler();
  info.param = req.param();
  info.shard_index = req.shard_index();
  info.shard_total = req.shard_total();
  info.trigger_type = FromProtoTrigger(req.trigger_type());
  info.attempt = req.attempt();
  if (req.has_scheduled_time()) info.scheduled_time = FromProto(req.scheduled_time());
  info.deadline = run.deadline;
  std::shared_ptr<RunLogFile> log = run.log;
  JobContext ctx(std::move(info), run.token, [log](absl::string_view line) {
    if (log != nullptr) log->Append(line);
  });
  try {
    return handler(ctx);
  } catch (const std::exception& e) {
    return Result::Fail(absl::StrCat("handler threw: ", e.what()));
  } catch (...) {
    return Result::Fail("handler threw an unknown exception");
  }
}

Result ExecuteScript(const RunState& run, ScriptRunner* scripts) {
  const RunRequest& req = run.request;
  const auto language = req.glue_type() == jobwheel::v1::GLUE_TYPE_SCRIPT_PYTHON
                            ? ScriptRunner::Language::kPython
                            : ScriptRunner::Language::kShell;
  auto path =
      scripts->Materialize(req.job_id(), req.script_version(), language, req.script_source());
  if (!path.ok()) {
    return Result::Fail(absl::StrCat("cannot write script: ", path.status().message()));
  }
  std::shared_ptr<RunLogFile> log = run.log;
  auto output = [log](absl::string_view line) {
    if (log != nullptr) log->Append(line);
  };
  auto on_start = [log, &path](pid_t pid) {
    if (log != nullptr) log->Append(absl::StrCat("script ", *path, " started, pid ", pid));
  };
  // The param goes in the environment (JOBWHEEL_PARAM); $1 $2 $3 only under the legacy switch.
  ScriptContext context{
      req.run_id(),
      ScriptJobVars(req),
      {req.param(), absl::StrCat(req.shard_index()), absl::StrCat(req.shard_total())}};
  auto outcome = scripts->Run(language, *path, *run.token, output, on_start, context);
  if (!outcome.ok()) return Result::Fail(std::string(outcome.status().message()));
  if (outcome->exited && outcome->exit_code == 0) return Result::Ok("exit code 0");
  if (outcome->exited) {
    return Result::Fail(outcome->exit_code,
                        absl::StrCat("script exited with code ", outcome->exit_code));
  }
  return Result::Fail(128 + outcome->term_signal,
                      absl::StrCat("script killed by signal ", outcome->term_signal));
}

}  // namespace

Result ExecuteRun(const RunState& run, const HandlerFn& handler, ScriptRunner* scripts) {
  const RunRequest& req = run.request;
  run.Log(absl::StrCat(
      "run ", req.run_id(), " started",
      run.deadline != absl::InfiniteFuture()
          ? absl::StrCat(" (timeout ", absl::FormatDuration(FromProto(req.timeout())), ")")
          : ""));
  if (IsScript(req.glue_type())) return ExecuteScript(run, scripts);
  return ExecuteHandler(run, handler);
}

}  // namespace jobwheel::sdk
