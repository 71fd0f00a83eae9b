#include "services/scheduler/cron.h"

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "services/scheduler/cron_parser.h"
#include "services/scheduler/cron_rep.h"
#include "services/scheduler/cron_search.h"

// CronExpression wires the pieces that reproduce Quartz 2.3.2's
// org.quartz.CronExpression: cron_parser (what Quartz accepts and how it
// reads it), cron_search (getTimeAfter step by step) on java_calendar (the
// lenient GregorianCalendar it runs on), around the parsed form in cron_rep.h.
// tests/cron compares the whole with Quartz on thousands of generated cases.

namespace jobwheel::scheduler {

absl::StatusOr<CronExpression> CronExpression::Parse(absl::string_view expression,
                                                     absl::string_view time_zone) {
  absl::StatusOr<cron_internal::CronRep> rep = cron_internal::ParseCron(expression, time_zone);
  if (!rep.ok()) return rep.status();
  return CronExpression(std::make_shared<const cron_internal::CronRep>(*std::move(rep)));
}

CronSearch CronExpression::Search(absl::Time after) const {
  return cron_internal::SearchAfter(*rep_, after);
}

std::optional<absl::Time> CronExpression::NextAfter(absl::Time after) const {
  CronSearch search = Search(after);
  // Quartz answers are always later than `after` in practice; a schedule must
  // never go backwards, so anything else counts as "no more fire times".
  if (search.time.has_value() && *search.time <= after) return std::nullopt;
  return search.time;
}

const std::string& CronExpression::expression() const { return rep_->expression; }

const absl::TimeZone& CronExpression::time_zone() const { return rep_->time_zone; }

}  // namespace jobwheel::scheduler
