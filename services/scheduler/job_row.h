#ifndef JOBWHEEL_SERVICES_SCHEDULER_JOB_ROW_H_
#define JOBWHEEL_SERVICES_SCHEDULER_JOB_ROW_H_

#include <string>
#include <vector>

#include "jobwheel/v1/types.pb.h"
#include "pqxx/pqxx"

namespace jobwheel::scheduler {

// The select list that JobFromRow reads, for table alias `j`:
// "SELECT " + kJobColumns + " FROM jobs j ...".
extern const char* const kJobColumns;

// Decodes a row selected with kJobColumns, starting at column `offset`.
jobwheel::v1::Job JobFromRow(const pqxx::row& row, int offset = 0);

// kJobColumns plus what only the admin API reads (labels, the job's own run retention): the
// leader's claim and hand-off do not carry them.
extern const char* const kJobAdminColumns;

// Decodes a row selected with kJobAdminColumns.
jobwheel::v1::Job JobFromAdminRow(const pqxx::row& row);

// The select list that RunFromRow reads, for table alias `r`.
extern const char* const kRunColumns;

jobwheel::v1::Run RunFromRow(const pqxx::row& row);

}  // namespace jobwheel::scheduler

#endif  // JOBWHEEL_SERVICES_SCHEDULER_JOB_ROW_H_
