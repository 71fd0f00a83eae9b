#include "jobwheel/job_context.h"

#include <cstdarg>
#include <cstdio>
#include <utility>
#include <vector>

namespace jobwheel {

absl::string_view TriggerTypeName(TriggerType type) {
  switch (type) {
    case TriggerType::kUnspecified:
      return "unspecified";
    case TriggerType::kCron:
      return "cron";
    case TriggerType::kFixRate:
      return "fix_rate";
    case TriggerType::kManual:
      return "manual";
    case TriggerType::kMisfire:
      return "misfire";
    case TriggerType::kRetry:
      return "retry";
    case TriggerType::kParent:
      return "parent";
  }
  return "unknown";
}

JobContext::JobContext(RunInfo info, std::shared_ptr<CancellationToken> token, LogSink log_sink)
    : info_(std::move(info)),
      token_(token != nullptr ? std::move(token) : std::make_shared<CancellationToken>()),
      log_sink_(std::move(log_sink)) {}

bool JobContext::SleepFor(absl::Duration d) const { return !token_->WaitFor(d); }

void JobContext::Log(absl::string_view message) const {
  if (!log_sink_) return;
  // One sink call per line so every line gets its own timestamp.
  size_t start = 0;
  while (true) {
    size_t nl = message.find('\n', start);
    if (nl == absl::string_view::npos) {
      log_sink_(message.substr(start));
      return;
    }
    log_sink_(message.substr(start, nl - start));
    start = nl + 1;
    if (start == message.size()) return;
  }
}

void JobContext::Logf(const char* format, ...) const {
  va_list args;
  va_start(args, format);
  va_list copy;
  va_copy(copy, args);
  const int n = std::vsnprintf(nullptr, 0, format, copy);
  va_end(copy);
  if (n < 0) {
    va_end(args);
    return;
  }
  std::vector<char> buf(static_cast<size_t>(n) + 1);
  std::vsnprintf(buf.data(), buf.size(), format, args);
  va_end(args);
  Log(absl::string_view(buf.data(), static_cast<size_t>(n)));
}

}  // namespace jobwheel
