#include "services/http_executor/http_job_handler.h"

#include <algorithm>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/base/log_text.h"

namespace jobwheel::http_executor {
namespace {

constexpr int kBadSpecCode = 400;
constexpr int kRefusedCode = 403;

std::string Describe(const HttpJobSpec& spec) {
  std::vector<std::string> names;
  for (const auto& h : spec.headers) names.push_back(h.first);
  for (const SecretRef& s : spec.secret_headers)
    names.push_back(absl::StrCat(s.header, " (secret)"));
  return absl::StrCat(spec.method, " ", spec.url.ToString(), "; timeout ",
                      absl::FormatDuration(spec.timeout), "; expect ",
                      spec.expected_status.ToString(), "; redirects ",
                      spec.follow_redirects ? absl::StrCat("up to ", spec.max_redirects) : "off",
                      names.empty() ? "" : absl::StrCat("; headers ", absl::StrJoin(names, ", ")),
                      spec.body.empty() ? "" : absl::StrCat("; body ", spec.body.size(), " bytes"));
}

void LogResponse(jobwheel::JobContext& ctx, const HttpCaller::Outcome& o) {
  const HttpResponse& r = o.response;
  ctx.Log(absl::StrCat("HTTP ", r.status, " from ", o.url.ToString(),
                       r.connected_ip.empty() ? "" : absl::StrCat(" (", r.connected_ip, ")")));
  for (const auto& [name, value] : r.headers) {
    const bool hidden = absl::EqualsIgnoreCase(name, "set-cookie");
    ctx.Log(
        absl::StrCat("< ", LogText(name, 256), ": ", hidden ? "(hidden)" : LogText(value, 1024)));
  }
  ctx.Log(absl::StrCat("body: ", r.body_bytes, " bytes",
                       r.body_cut ? " (stopped reading at --max_response_bytes)" : "",
                       r.body_bytes > static_cast<int64_t>(r.body_head.size())
                           ? absl::StrCat("; the first ", r.body_head.size(), ":")
                           : (r.body_head.empty() ? "" : ":")));
  for (absl::string_view line : absl::StrSplit(r.body_head, '\n')) {
    ctx.Log(absl::StrCat("| ", LogText(absl::StripSuffix(line, "\r"), 1024)));
  }
}

}  // namespace

HttpJobHandler::HttpJobHandler(HttpCaller& caller, const SecretSource& secrets,
                               HttpExecutorMetrics& metrics, Clock& clock)
    : caller_(caller), secrets_(secrets), metrics_(metrics), clock_(clock) {}

jobwheel::Result HttpJobHandler::Run(jobwheel::JobContext& ctx) {
  absl::StatusOr<HttpJobSpec> spec = ParseHttpJobSpec(ctx.param());
  if (!spec.ok()) {
    metrics_.Calls("bad_spec").Increment();
    ctx.Log(std::string(spec.status().message()));
    return jobwheel::Result::Fail(kBadSpecCode, std::string(spec.status().message()));
  }
  HeaderList secret_headers;
  for (const SecretRef& ref : spec->secret_headers) {
    absl::StatusOr<std::string> value = secrets_.Read(ref);
    if (!value.ok()) {
      metrics_.Calls("bad_spec").Increment();
      ctx.Log(std::string(value.status().message()));
      return jobwheel::Result::Fail(kBadSpecCode, std::string(value.status().message()));
    }
    secret_headers.emplace_back(ref.header, *std::move(value));
  }
  ctx.Log(Describe(*spec));
  // Who is calling, for the endpoint's logs and deduplication (a run id is sent once per try).
  spec->headers.emplace_back("X-Jobwheel-Job", absl::StrCat(ctx.job_id()));
  spec->headers.emplace_back("X-Jobwheel-Fire", absl::StrCat(ctx.fire_id()));
  spec->headers.emplace_back("X-Jobwheel-Run", absl::StrCat(ctx.run_id()));
  spec->headers.emplace_back("X-Jobwheel-Scheduled-Us",
                             absl::StrCat(absl::ToUnixMicros(ctx.scheduled_time())));
  const absl::Time start = clock_.Now();
  // The run's own timeout (ctx.deadline()) is the SDK's: it cancels the run (TIMED_OUT), which
  // aborts the transfer. The spec's timeout ends the call as a failure of this handler.
  const absl::Time deadline = start + spec->timeout;
  auto token = ctx.cancellation();
  absl::StatusOr<HttpCaller::Outcome> outcome = caller_.Call(
      *spec, secret_headers, deadline, [token] { return token->cancelled(); },
      [&ctx](absl::string_view line) { ctx.Log(line); });
  metrics_.call_duration_seconds.Observe(absl::ToDoubleSeconds(clock_.Now() - start));
  return Finish(ctx, *spec, outcome);
}

jobwheel::Result HttpJobHandler::Finish(jobwheel::JobContext& ctx, const HttpJobSpec& spec,
                                        const absl::StatusOr<HttpCaller::Outcome>& outcome) {
  if (!outcome.ok()) {
    const absl::Status& s = outcome.status();
    std::string message(s.message());
    int code = jobwheel::Result::kFailCode;
    absl::string_view kind = "failed";
    if (absl::IsPermissionDenied(s)) {
      code = kRefusedCode;
      kind = "refused";
    } else if (absl::IsDeadlineExceeded(s)) {
      code = jobwheel::Result::kTimeoutCode;
      kind = "timed_out";
      message = absl::StrCat(spec.method, " ", spec.url.ToString(), ": ", message, " after ",
                             absl::FormatDuration(spec.timeout), " (timeout)");
    } else if (absl::IsCancelled(s)) {
      kind = "cancelled";
    }
    if (!absl::IsDeadlineExceeded(s)) {
      message = absl::StrCat(spec.method, " ", spec.url.ToString(), ": ", message);
    }
    metrics_.Calls(kind).Increment();
    ctx.Log(message);
    return jobwheel::Result::Fail(code, message);
  }
  LogResponse(ctx, *outcome);
  metrics_.redirects_followed.Increment(outcome->redirects);
  const int status = outcome->response.status;
  if (!spec.expected_status.Matches(status)) {
    metrics_.Calls("unexpected_status").Increment();
    std::string message = absl::StrCat("HTTP ", status, " from ", outcome->url.ToString(),
                                       "; expected ", spec.expected_status.ToString());
    if (status >= 300 && status < 400 && !spec.follow_redirects) {
      absl::StrAppend(&message, " (redirects are not followed: follow_redirects is off)");
    }
    return jobwheel::Result::Fail(jobwheel::Result::kFailCode, message);
  }
  metrics_.Calls("succeeded").Increment();
  return jobwheel::Result::Ok(absl::StrCat("HTTP ", status, " from ", outcome->url.ToString()));
}

}  // namespace jobwheel::http_executor
