#ifndef JOBWHEEL_SERVICES_SCHEDULER_DELAY_CHAIN_SQL_H_
#define JOBWHEEL_SERVICES_SCHEDULER_DELAY_CHAIN_SQL_H_

#include <vector>

#include "jobwheel/v1/types.pb.h"
#include "pqxx/pqxx"
#include "services/scheduler/fire_plan.h"
#include "services/scheduler/fire_store.h"

// The statements of FIX_DELAY chains (migration 9), run inside the leader's fenced
// transactions by PgFireStore: a FIX_DELAY job waits for the fire the claim recorded for it
// (jobs.delay_fire_id) and gets its next fire time once that fire's runs, retries included,
// have ended and been followed up. libpqxx exceptions propagate to the caller's transaction.
namespace jobwheel::scheduler {

// The claim's guard: removes from `jobs` the FIX_DELAY jobs that have a run open (a manual run,
// or one left by a resume or an edit), so none is fired while one runs. One statement, only
// when the claim holds FIX_DELAY jobs: the claim of every other job stays a plain index scan.
void DropDelayJobsWithOpenRuns(pqxx::work& tx, std::vector<jobwheel::v1::Job>* jobs);

// The claimed FIX_DELAY jobs wait for the fires the claim recorded for them.
void RecordDelayChains(pqxx::work& tx, const std::vector<DelayChainFire>& chains);

// Sets next_fire_at = the last run's end + the delay for up to `limit` jobs whose awaited fire
// has ended, and counts the jobs still waiting.
FireStore::DelayChainResult AdvanceDelayChainsIn(pqxx::work& tx, int limit);

}  // namespace jobwheel::scheduler

#endif  // JOBWHEEL_SERVICES_SCHEDULER_DELAY_CHAIN_SQL_H_
