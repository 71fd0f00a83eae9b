#ifndef JOBWHEEL_SERVICES_SCHEDULER_ADMIN_PG_AUDIT_LOG_H_
#define JOBWHEEL_SERVICES_SCHEDULER_ADMIN_PG_AUDIT_LOG_H_

#include <cstdint>
#include <vector>

#include "jobwheel/v1/job_admin.pb.h"
#include "pqxx/pqxx"
#include "services/scheduler/admin/job_store.h"

namespace jobwheel::scheduler::admin {

// The audit_events table (migration 10): PgJobStore writes an event inside the transaction of
// the change it records (so a call that fails or is refused leaves none) and reads pages of
// them. libpqxx exceptions propagate to the caller's transaction, which maps them.

// Inserts `event` (its id and time are the database's: now()) and returns its id.
int64_t InsertAuditEvent(pqxx::work& tx, const jobwheel::v1::AuditEvent& event);

// Events with id < before_id (0: no bound) matching `filter`, newest first, at most `limit`.
std::vector<jobwheel::v1::AuditEvent> SelectAuditEvents(pqxx::transaction_base& tx,
                                                        const AuditFilter& filter,
                                                        int64_t before_id, int limit);

// Deletes up to `limit` events older than `cutoff`; returns how many.
int DeleteAuditEventsBefore(pqxx::transaction_base& tx, absl::Time cutoff, int limit);

}  // namespace jobwheel::scheduler::admin

#endif  // JOBWHEEL_SERVICES_SCHEDULER_ADMIN_PG_AUDIT_LOG_H_
