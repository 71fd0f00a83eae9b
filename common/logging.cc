#include "common/logging.h"

#include "spdlog/sinks/stdout_sinks.h"

namespace jobwheel {

void InitLogging(const std::string& component, bool json, const std::string& level) {
  auto logger = spdlog::stderr_logger_mt(component);
  if (json) {
    // The message is escaped by callers that log user data; component and level are fixed.
    logger->set_pattern(
        "{\"time\":\"%Y-%m-%dT%H:%M:%S.%fZ\",\"level\":\"%l\",\"component\":\"%n\","
        "\"msg\":\"%v\"}",
        spdlog::pattern_time_type::utc);
  } else {
    logger->set_pattern("%Y-%m-%d %H:%M:%S.%e %^%L%$ %n: %v");
  }
  logger->set_level(spdlog::level::from_str(level));
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
}

}  // namespace jobwheel
