#ifndef JOBWHEEL_COMMON_PG_PG_AUDIT_LOG_H_
#define JOBWHEEL_COMMON_PG_PG_AUDIT_LOG_H_

#include <cstdint>
#include <vector>

#include "absl/time/time.h"
#include "common/audit/audit_filter.h"
#include "jobwheel/v1/job_admin.pb.h"
#include "pqxx/pqxx"

namespace jobwheel {

// The audit_events table (migration 10): the stores of the admin services (the scheduler's
// jobs and tokens, the registry's apps and executor drains) write an event inside the
// transaction of the change it records (so a call that fails or is refused leaves none); the
// scheduler reads pages of them (ListAuditEvents) and deletes old ones (retention). libpqxx
// exceptions propagate to the caller's transaction, which maps them.

// Inserts `event` (its id and time are the database's: now()) and returns its id.
int64_t InsertAuditEvent(pqxx::work& tx, const jobwheel::v1::AuditEvent& event);

// Events with id < before_id (0: no bound) matching `filter`, newest first, at most `limit`.
std::vector<jobwheel::v1::AuditEvent> SelectAuditEvents(pqxx::transaction_base& tx,
                                                        const AuditFilter& filter,
                                                        int64_t before_id, int limit);

// Deletes up to `limit` events older than `cutoff`; returns how many.
int DeleteAuditEventsBefore(pqxx::transaction_base& tx, absl::Time cutoff, int limit);

}  // namespace jobwheel

#endif  // JOBWHEEL_COMMON_PG_PG_AUDIT_LOG_H_
