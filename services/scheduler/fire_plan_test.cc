// The claim arithmetic: which fires a due job gets, misfires, next fire times, hand-off times.
#include "services/scheduler/fire_plan.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/time/proto_time.h"
#include "gtest/gtest.h"

namespace jobwheel::scheduler {
namespace {

using jobwheel::v1::Job;

const absl::Time kNow = absl::FromUnixSeconds(1700000000);

Job CronJob(int64_t id, absl::Time next, const std::string& expression = "* * * * * ?",
            jobwheel::v1::MisfireStrategy misfire = jobwheel::v1::MISFIRE_STRATEGY_DO_NOTHING) {
  Job job;
  job.set_id(id);
  job.mutable_schedule()->mutable_cron()->set_expression(expression);
  job.mutable_schedule()->mutable_cron()->set_time_zone("UTC");
  job.set_misfire_strategy(misfire);
  *job.mutable_next_fire_time() = ToProto(next);
  *job.mutable_create_time() = ToProto(kNow - absl::Hours(1));
  return job;
}

std::vector<absl::Time> Times(const ClaimPlan& plan, int64_t job) {
  std::vector<absl::Time> out;
  for (const auto& f : plan.fires) {
    if (f.job_id == job) out.push_back(f.scheduled);
  }
  return out;
}

TEST(FirePlanTest, HorizonIsThePrereadWindow) {
  EXPECT_EQ(ClaimHorizon(kNow, ClaimWindow{}), kNow + absl::Seconds(5));
  ClaimWindow w;
  w.preread_window = absl::Seconds(2);
  EXPECT_EQ(ClaimHorizon(kNow, w), kNow + absl::Seconds(2));
}

TEST(FirePlanTest, DueJobGetsEveryTimeUpToWindowPlusClaimAhead) {
  const ClaimPlan plan = PlanClaim({CronJob(7, kNow + absl::Seconds(1))}, kNow, ClaimWindow{});
  std::vector<absl::Time> want;
  for (int i = 1; i <= 10; ++i) want.push_back(kNow + absl::Seconds(i));
  EXPECT_EQ(Times(plan, 7), want);
  for (const auto& f : plan.fires) {
    EXPECT_EQ(f.trigger_type, jobwheel::v1::TRIGGER_TYPE_CRON);
    EXPECT_FALSE(f.skipped);
    EXPECT_EQ(f.reason, "");
  }
  ASSERT_EQ(plan.next.size(), 1u);
  EXPECT_EQ(plan.next[0].job_id, 7);
  EXPECT_EQ(plan.next[0].next, kNow + absl::Seconds(11));
  EXPECT_TRUE(plan.misfires.empty());
}

TEST(FirePlanTest, TheFillLimitIsInclusive) {
  ClaimWindow w;
  w.preread_window = absl::Seconds(1);
  w.claim_ahead = absl::ZeroDuration();
  const ClaimPlan plan = PlanClaim({CronJob(1, kNow + absl::Seconds(1))}, kNow, w);
  EXPECT_EQ(Times(plan, 1), std::vector<absl::Time>{kNow + absl::Seconds(1)});
  EXPECT_EQ(plan.next[0].next, kNow + absl::Seconds(2));
}

TEST(FirePlanTest, SparseScheduleGetsOneFireAndMovesFarAhead) {
  // Every minute at second 0; due now.
  const absl::Time minute = absl::FromUnixSeconds(1700000000 / 60 * 60 + 60);
  const ClaimPlan plan = PlanClaim({CronJob(1, minute, "0 * * * * ?")}, minute, ClaimWindow{});
  EXPECT_EQ(Times(plan, 1), std::vector<absl::Time>{minute});
  EXPECT_EQ(plan.next[0].next, minute + absl::Minutes(1));
}

TEST(FirePlanTest, LateWithinTheThresholdIsNotAMisfire) {
  const ClaimPlan plan = PlanClaim({CronJob(1, kNow - absl::Seconds(5))}, kNow, ClaimWindow{});
  EXPECT_TRUE(plan.misfires.empty());
  EXPECT_EQ(Times(plan, 1).front(), kNow - absl::Seconds(5));
  EXPECT_EQ(Times(plan, 1).size(), 16u);  // now-5 .. now+10
}

TEST(FirePlanTest, MisfireDoNothingRecordsOneSkippedRow) {
  const ClaimPlan plan = PlanClaim({CronJob(1, kNow - absl::Seconds(60))}, kNow, ClaimWindow{});
  ASSERT_EQ(plan.misfires.size(), 1u);
  EXPECT_EQ(plan.misfires[0].missed, 55);  // now-60 .. now-6
  EXPECT_EQ(plan.misfires[0].strategy, jobwheel::v1::MISFIRE_STRATEGY_DO_NOTHING);
  const PlannedFire& row = plan.fires.front();
  EXPECT_TRUE(row.skipped);
  EXPECT_EQ(row.scheduled, kNow - absl::Seconds(60));
  EXPECT_EQ(row.trigger_type, jobwheel::v1::TRIGGER_TYPE_CRON);
  EXPECT_TRUE(absl::StartsWith(row.reason, "misfire: 55 fire(s) from ")) << row.reason;
  EXPECT_TRUE(absl::EndsWith(row.reason, " skipped (DO_NOTHING)")) << row.reason;
  // Then the times within the threshold still fire.
  EXPECT_EQ(plan.fires.size(), 1u + 16u);
  EXPECT_EQ(plan.fires[1].scheduled, kNow - absl::Seconds(5));
  EXPECT_FALSE(plan.fires[1].skipped);
}

TEST(FirePlanTest, MisfireFireOnceNowFiresOnceAsMisfire) {
  const ClaimPlan plan = PlanClaim({CronJob(1, kNow - absl::Seconds(60), "* * * * * ?",
                                            jobwheel::v1::MISFIRE_STRATEGY_FIRE_ONCE_NOW)},
                                   kNow, ClaimWindow{});
  ASSERT_EQ(plan.misfires.size(), 1u);
  EXPECT_EQ(plan.misfires[0].strategy, jobwheel::v1::MISFIRE_STRATEGY_FIRE_ONCE_NOW);
  const PlannedFire& row = plan.fires.front();
  EXPECT_FALSE(row.skipped);
  EXPECT_EQ(row.trigger_type, jobwheel::v1::TRIGGER_TYPE_MISFIRE);
  EXPECT_EQ(row.scheduled, kNow - absl::Seconds(60));
  EXPECT_TRUE(absl::EndsWith(row.reason, " missed; fired once now (FIRE_ONCE_NOW)"));
}

TEST(FirePlanTest, MisfireFireOnceNowAlreadyFiredOnceForTheOutageIsSkipped) {
  const Job job = CronJob(1, kNow - absl::Seconds(60), "* * * * * ?",
                          jobwheel::v1::MISFIRE_STRATEGY_FIRE_ONCE_NOW);
  // Fired once this term for late fires up to now-60 (or later): the same outage.
  for (const absl::Duration through : {absl::Seconds(60), absl::Seconds(5)}) {
    const ClaimPlan plan = PlanClaim({job}, kNow, ClaimWindow{}, {{1, kNow - through}});
    ASSERT_EQ(plan.misfires.size(), 1u);
    EXPECT_EQ(plan.misfires[0].missed, 55);  // Counted all the same.
    EXPECT_EQ(plan.misfires[0].strategy, jobwheel::v1::MISFIRE_STRATEGY_FIRE_ONCE_NOW);
    const PlannedFire& row = plan.fires.front();
    EXPECT_TRUE(row.skipped);
    EXPECT_EQ(row.trigger_type, jobwheel::v1::TRIGGER_TYPE_CRON);
    EXPECT_EQ(row.scheduled, kNow - absl::Seconds(60));
    EXPECT_TRUE(absl::StartsWith(row.reason, "misfire: 55 fire(s) from ")) << row.reason;
    EXPECT_TRUE(absl::EndsWith(row.reason, " missed; skipped, the job fired once (FIRE_ONCE_NOW)"))
        << row.reason;
    EXPECT_EQ(plan.fires.size(), 1u + 16u);
  }
  // A fire-once of an earlier outage (through before the first missed time), or of another
  // job, does not cover it.
  for (const auto& [id, through] : {std::make_pair(int64_t{1}, absl::Seconds(61)),
                                    std::make_pair(int64_t{2}, absl::Seconds(5))}) {
    const ClaimPlan plan = PlanClaim({job}, kNow, ClaimWindow{}, {{id, kNow - through}});
    EXPECT_FALSE(plan.fires.front().skipped);
    EXPECT_EQ(plan.fires.front().trigger_type, jobwheel::v1::TRIGGER_TYPE_MISFIRE);
  }
  // DO_NOTHING is skipped either way, with its own reason.
  const ClaimPlan plan =
      PlanClaim({CronJob(1, kNow - absl::Seconds(60))}, kNow, ClaimWindow{}, {{1, kNow}});
  EXPECT_TRUE(absl::EndsWith(plan.fires.front().reason, " skipped (DO_NOTHING)"));
}

TEST(FirePlanTest, HugeMisfireStopsCountingAndJumpsPastTheThreshold) {
  // Every second for ~3 years: more than kMaxMissedCounted missed times.
  const absl::Time next = kNow - absl::Hours(24 * 365 * 3);
  const ClaimPlan plan = PlanClaim({CronJob(1, next)}, kNow, ClaimWindow{});
  ASSERT_EQ(plan.misfires.size(), 1u);
  EXPECT_EQ(plan.misfires[0].missed, kMaxMissedCounted);
  // The first time not a misfire follows: now-5.
  ASSERT_GE(plan.fires.size(), 2u);
  EXPECT_EQ(plan.fires[1].scheduled, kNow - absl::Seconds(5));
  EXPECT_EQ(plan.next[0].next, kNow + absl::Seconds(11));
}

TEST(FirePlanTest, InvalidScheduleIsReportedAndCleared) {
  Job bad = CronJob(3, kNow, "not a cron");
  const ClaimPlan plan = PlanClaim({bad, CronJob(4, kNow + absl::Seconds(1))}, kNow, ClaimWindow{});
  ASSERT_EQ(plan.invalid.size(), 1u);
  EXPECT_EQ(plan.invalid[0].first, 3);
  EXPECT_FALSE(plan.invalid[0].second.ok());
  ASSERT_EQ(plan.next.size(), 2u);
  EXPECT_EQ(plan.next[0].job_id, 3);
  EXPECT_FALSE(plan.next[0].next.has_value());
  EXPECT_TRUE(Times(plan, 3).empty());
  EXPECT_EQ(Times(plan, 4).size(), 10u);
}

TEST(FirePlanTest, FixRateAndOneShotSchedules) {
  Job rate;
  rate.set_id(1);
  rate.mutable_schedule()->mutable_fix_rate()->set_interval_seconds(3);
  *rate.mutable_schedule()->mutable_fix_rate()->mutable_start_time() = ToProto(kNow);
  *rate.mutable_next_fire_time() = ToProto(kNow + absl::Seconds(3));
  Job none;
  none.set_id(2);
  none.mutable_schedule()->mutable_none();
  *none.mutable_next_fire_time() = ToProto(kNow + absl::Seconds(1));
  const ClaimPlan plan = PlanClaim({rate, none}, kNow, ClaimWindow{});
  EXPECT_EQ(Times(plan, 1),
            (std::vector<absl::Time>{kNow + absl::Seconds(3), kNow + absl::Seconds(6),
                                     kNow + absl::Seconds(9)}));
  EXPECT_EQ(plan.fires[0].trigger_type, jobwheel::v1::TRIGGER_TYPE_FIX_RATE);
  EXPECT_EQ(plan.next[0].next, kNow + absl::Seconds(12));
  // A job without a schedule (next_fire_time set by hand) fires that once, then never.
  EXPECT_EQ(Times(plan, 2).size(), 1u);
  EXPECT_FALSE(plan.next[1].next.has_value());
}

TEST(FirePlanTest, HandOffTimeIsTheLeadAheadOnTheGrid) {
  const absl::Duration lead = absl::Milliseconds(300);
  const absl::Duration grid = absl::Milliseconds(100);
  EXPECT_EQ(HandOffTime(kNow, lead, grid), kNow - absl::Milliseconds(300));
  EXPECT_EQ(HandOffTime(kNow + absl::Milliseconds(350), lead, grid), kNow);
  EXPECT_EQ(HandOffTime(kNow + absl::Milliseconds(399), lead, grid), kNow);
  EXPECT_EQ(HandOffTime(kNow + absl::Milliseconds(400), lead, grid),
            kNow + absl::Milliseconds(100));
  // No lead, or no grid: exact.
  EXPECT_EQ(HandOffTime(kNow + absl::Milliseconds(7), absl::ZeroDuration(), grid),
            kNow + absl::Milliseconds(7));
  EXPECT_EQ(HandOffTime(kNow + absl::Milliseconds(7), lead, absl::ZeroDuration()),
            kNow - absl::Milliseconds(293));
}

TEST(FirePlanTest, LatenessCountsFromHandOffForScheduledFiresOnly) {
  const absl::Duration lead = absl::Milliseconds(300);
  const absl::Duration grid = absl::Milliseconds(100);
  const absl::Time sent = kNow - absl::Milliseconds(290);
  EXPECT_EQ(HandOffLateness(jobwheel::v1::TRIGGER_TYPE_CRON, kNow, sent, lead, grid),
            absl::Milliseconds(10));
  EXPECT_EQ(HandOffLateness(jobwheel::v1::TRIGGER_TYPE_FIX_RATE, kNow, sent, lead, grid),
            absl::Milliseconds(10));
  EXPECT_EQ(HandOffLateness(jobwheel::v1::TRIGGER_TYPE_MANUAL, kNow, sent, lead, grid),
            -absl::Milliseconds(290));
  EXPECT_EQ(HandOffLateness(jobwheel::v1::TRIGGER_TYPE_MISFIRE, kNow, kNow, lead, grid),
            absl::ZeroDuration());
}

TEST(FirePlanTest, HandOffBackoffDoublesUpToACap) {
  EXPECT_EQ(HandOffBackoff(1), absl::Milliseconds(100));
  EXPECT_EQ(HandOffBackoff(2), absl::Milliseconds(200));
  EXPECT_EQ(HandOffBackoff(3), absl::Milliseconds(400));
  EXPECT_EQ(HandOffBackoff(4), absl::Milliseconds(800));
  EXPECT_EQ(HandOffBackoff(5), absl::Milliseconds(1600));
  EXPECT_EQ(HandOffBackoff(kMaxHandOffFailures + 3), absl::Milliseconds(1600));
}

// --- Late pending fires ---

jobwheel::v1::Fire PendingFire(int64_t id, int64_t job, absl::Time scheduled,
                               jobwheel::v1::MisfireStrategy misfire,
                               jobwheel::v1::TriggerType type = jobwheel::v1::TRIGGER_TYPE_CRON) {
  jobwheel::v1::Fire f;
  f.set_fire_id(id);
  f.mutable_job()->set_id(job);
  f.mutable_job()->set_misfire_strategy(misfire);
  *f.mutable_scheduled_time() = ToProto(scheduled);
  f.set_trigger_type(type);
  return f;
}

std::vector<int64_t> Ids(const std::vector<LateFire>& fires) {
  std::vector<int64_t> out;
  for (const LateFire& f : fires) out.push_back(f.fire_id);
  return out;
}

TEST(FirePlanTest, OnlyScheduleDrivenFiresBeyondTheThresholdAreLate) {
  const absl::Duration t = absl::Seconds(5);
  EXPECT_FALSE(IsLateFire(jobwheel::v1::TRIGGER_TYPE_CRON, kNow - t, kNow, t));
  EXPECT_TRUE(
      IsLateFire(jobwheel::v1::TRIGGER_TYPE_CRON, kNow - t - absl::Milliseconds(1), kNow, t));
  EXPECT_TRUE(IsLateFire(jobwheel::v1::TRIGGER_TYPE_FIX_RATE, kNow - absl::Hours(1), kNow, t));
  for (auto type : {jobwheel::v1::TRIGGER_TYPE_MANUAL, jobwheel::v1::TRIGGER_TYPE_RETRY,
                    jobwheel::v1::TRIGGER_TYPE_PARENT, jobwheel::v1::TRIGGER_TYPE_MISFIRE}) {
    EXPECT_FALSE(IsLateFire(type, kNow - absl::Hours(1), kNow, t)) << type;
  }
}

TEST(FirePlanTest, FiresOnTimeMakeAnEmptyPlan) {
  const auto once = jobwheel::v1::MISFIRE_STRATEGY_FIRE_ONCE_NOW;
  const LatePlan plan = PlanLateFires(
      {PendingFire(1, 10, kNow - absl::Seconds(5), once), PendingFire(2, 10, kNow, once),
       PendingFire(3, 11, kNow - absl::Hours(1), once, jobwheel::v1::TRIGGER_TYPE_MANUAL)},
      kNow, absl::Seconds(5));
  EXPECT_TRUE(plan.empty());
  EXPECT_TRUE(plan.misfires.empty());
}

TEST(FirePlanTest, LateFiresOfADoNothingJobAreAllSkippedAndCounted) {
  const auto skip = jobwheel::v1::MISFIRE_STRATEGY_DO_NOTHING;
  const LatePlan plan = PlanLateFires({PendingFire(3, 10, kNow - absl::Seconds(6), skip),
                                       PendingFire(1, 10, kNow - absl::Seconds(8), skip),
                                       PendingFire(2, 10, kNow - absl::Seconds(7), skip),
                                       PendingFire(4, 10, kNow - absl::Seconds(4), skip)},
                                      kNow, absl::Seconds(5));
  EXPECT_EQ(Ids(plan.skipped), (std::vector<int64_t>{1, 2, 3}));  // Not 4: on time.
  EXPECT_TRUE(plan.fired_once.empty());
  ASSERT_EQ(plan.misfires.size(), 1u);
  EXPECT_EQ(plan.misfires[0].strategy, skip);
  EXPECT_EQ(plan.misfires[0].missed, 3);
  EXPECT_TRUE(absl::StartsWith(plan.skipped[0].reason, "late: 3 pending fire(s) from "))
      << plan.skipped[0].reason;
  EXPECT_TRUE(absl::StrContains(plan.skipped[0].reason, "skipped (DO_NOTHING)"));
  // Unspecified is DO_NOTHING.
  const LatePlan unspecified = PlanLateFires(
      {PendingFire(5, 12, kNow - absl::Minutes(1), jobwheel::v1::MISFIRE_STRATEGY_UNSPECIFIED)},
      kNow, absl::Seconds(5));
  EXPECT_EQ(Ids(unspecified.skipped), std::vector<int64_t>{5});
}

TEST(FirePlanTest, FireOnceNowJobFiresItsEarliestLateFireOnceAndSkipsTheRest) {
  const auto once = jobwheel::v1::MISFIRE_STRATEGY_FIRE_ONCE_NOW;
  const auto skip = jobwheel::v1::MISFIRE_STRATEGY_DO_NOTHING;
  const LatePlan plan = PlanLateFires({PendingFire(7, 20, kNow - absl::Seconds(6), once),
                                       PendingFire(6, 20, kNow - absl::Seconds(9), once),
                                       PendingFire(8, 20, kNow - absl::Seconds(1), once),
                                       PendingFire(9, 21, kNow - absl::Seconds(30), skip)},
                                      kNow, absl::Seconds(5));
  ASSERT_EQ(plan.fired_once.size(), 1u);
  EXPECT_EQ(plan.fired_once[0].fire_id, 6);
  EXPECT_EQ(plan.fired_once[0].job_id, 20);
  EXPECT_TRUE(absl::StrContains(plan.fired_once[0].reason, "fired once now (FIRE_ONCE_NOW)"));
  EXPECT_EQ(Ids(plan.skipped), (std::vector<int64_t>{7, 9}));  // 8 is on time.
  ASSERT_EQ(plan.misfires.size(), 2u);
  EXPECT_EQ(plan.misfires[0].strategy, once);
  EXPECT_EQ(plan.misfires[0].missed, 2);
  EXPECT_EQ(plan.misfires[1].strategy, skip);
  EXPECT_EQ(plan.misfires[1].missed, 1);
}

TEST(FirePlanTest, AFireOnceNowJobAlreadyFiredOnceSkipsAllItsLateFires) {
  const auto once = jobwheel::v1::MISFIRE_STRATEGY_FIRE_ONCE_NOW;
  // Its MISFIRE fire is in the same page.
  LatePlan plan = PlanLateFires(
      {PendingFire(1, 20, kNow - absl::Minutes(5), once, jobwheel::v1::TRIGGER_TYPE_MISFIRE),
       PendingFire(2, 20, kNow - absl::Seconds(9), once)},
      kNow, absl::Seconds(5));
  EXPECT_TRUE(plan.fired_once.empty());
  EXPECT_EQ(Ids(plan.skipped), std::vector<int64_t>{2});
  // It fired once for late fires up to kNow - 8 s (an earlier page or settle): those are
  // skipped, and the earliest later one fires once.
  plan = PlanLateFires({PendingFire(3, 20, kNow - absl::Seconds(9), once),
                        PendingFire(4, 20, kNow - absl::Seconds(8), once),
                        PendingFire(5, 20, kNow - absl::Seconds(7), once),
                        PendingFire(6, 20, kNow - absl::Seconds(6), once)},
                       kNow, absl::Seconds(5), {{20, kNow - absl::Seconds(8)}});
  EXPECT_EQ(Ids(plan.fired_once), std::vector<int64_t>{5});
  EXPECT_EQ(Ids(plan.skipped), (std::vector<int64_t>{3, 4, 6}));
  plan = PlanLateFires({PendingFire(3, 20, kNow - absl::Seconds(9), once)}, kNow, absl::Seconds(5),
                       {{20, kNow - absl::Seconds(5)}});
  EXPECT_TRUE(plan.fired_once.empty());
  EXPECT_EQ(Ids(plan.skipped), std::vector<int64_t>{3});
}

Job DelayJob(int64_t id, absl::Time next) {
  Job job;
  job.set_id(id);
  job.mutable_schedule()->mutable_fix_delay()->mutable_delay()->set_seconds(1);
  *job.mutable_next_fire_time() = ToProto(next);
  *job.mutable_create_time() = ToProto(kNow - absl::Hours(1));
  return job;
}

TEST(FirePlanTest, FixDelayJobGetsOneFireAndWaits) {
  const ClaimPlan plan =
      PlanClaim({DelayJob(3, kNow + absl::Seconds(2)), CronJob(4, kNow + absl::Seconds(1))}, kNow,
                ClaimWindow{});
  EXPECT_EQ(Times(plan, 3), std::vector<absl::Time>{kNow + absl::Seconds(2)});
  EXPECT_EQ(Times(plan, 4).size(), 10u);
  ASSERT_EQ(plan.delay_chains.size(), 1u);
  EXPECT_EQ(plan.delay_chains[0].job_id, 3);
  EXPECT_EQ(plan.delay_chains[0].scheduled, kNow + absl::Seconds(2));
  ASSERT_EQ(plan.next.size(), 2u);
  EXPECT_FALSE(plan.next[0].next.has_value());
  EXPECT_TRUE(plan.next[1].next.has_value());
}

TEST(FirePlanTest, LateFixDelayJobFiresNowAndIsNoMisfire) {
  const ClaimPlan plan = PlanClaim({DelayJob(3, kNow - absl::Minutes(10))}, kNow, ClaimWindow{});
  ASSERT_EQ(plan.fires.size(), 1u);
  EXPECT_EQ(plan.fires[0].scheduled, kNow);
  EXPECT_FALSE(plan.fires[0].skipped);
  EXPECT_EQ(plan.fires[0].trigger_type, jobwheel::v1::TRIGGER_TYPE_FIX_RATE);
  EXPECT_TRUE(plan.misfires.empty());
  EXPECT_EQ(plan.delay_chains[0].scheduled, kNow);
}

// --- Admission under load ---

TEST(FirePlanTest, SheddingMakesEveryPastDueTimeOneMisfireRow) {
  ClaimWindow w;
  w.shed_past_due = true;
  // 60 s behind: 55 times beyond the threshold and 5 within it (now-5 .. now-1), plus now.
  const ClaimPlan plan = PlanClaim({CronJob(1, kNow - absl::Seconds(60))}, kNow, w);
  ASSERT_EQ(plan.misfires.size(), 1u);
  EXPECT_EQ(plan.misfires[0].missed, 60);  // now-60 .. now-1: one row for the range
  EXPECT_EQ(plan.shed, 5);                 // now-5 .. now-1 would have fired late
  const PlannedFire& row = plan.fires.front();
  EXPECT_TRUE(row.skipped);
  EXPECT_EQ(row.scheduled, kNow - absl::Seconds(60));
  EXPECT_TRUE(absl::StartsWith(row.reason, "misfire: 60 fire(s) from ")) << row.reason;
  EXPECT_TRUE(absl::EndsWith(row.reason, "; shed under load (the hand-off was at capacity)"))
      << row.reason;
  // Then only what is not yet past: now .. now+10, on time.
  std::vector<absl::Time> want = {kNow - absl::Seconds(60)};
  for (int i = 0; i <= 10; ++i) want.push_back(kNow + absl::Seconds(i));
  EXPECT_EQ(Times(plan, 1), want);
  ASSERT_EQ(plan.next.size(), 1u);
  EXPECT_EQ(plan.next[0].next, kNow + absl::Seconds(11));
}

TEST(FirePlanTest, SheddingAFireOnceNowJobFiresItOnceNow) {
  ClaimWindow w;
  w.shed_past_due = true;
  const ClaimPlan plan = PlanClaim({CronJob(1, kNow - absl::Seconds(3), "* * * * * ?",
                                            jobwheel::v1::MISFIRE_STRATEGY_FIRE_ONCE_NOW)},
                                   kNow, w);
  ASSERT_EQ(plan.misfires.size(), 1u);
  EXPECT_EQ(plan.misfires[0].missed, 3);
  EXPECT_EQ(plan.shed, 3);
  EXPECT_EQ(plan.fires.front().trigger_type, jobwheel::v1::TRIGGER_TYPE_MISFIRE);
  EXPECT_FALSE(plan.fires.front().skipped);
}

TEST(FirePlanTest, WithoutSheddingNothingIsShed) {
  const ClaimPlan plan = PlanClaim({CronJob(1, kNow - absl::Seconds(60))}, kNow, ClaimWindow{});
  EXPECT_EQ(plan.shed, 0);
  EXPECT_EQ(plan.held_back, 0);
}

TEST(FirePlanTest, AdmissionStopsAtTheFireBudgetAndLeavesTheRestAsTheyAre) {
  ClaimWindow w;
  w.max_pending_fires = 15;  // Each job due at now+1 gets 10 fires.
  const ClaimPlan plan =
      PlanClaim({CronJob(1, kNow + absl::Seconds(1)), CronJob(2, kNow + absl::Seconds(1)),
                 CronJob(3, kNow + absl::Seconds(1))},
                kNow, w);
  EXPECT_EQ(Times(plan, 1).size(), 10u);
  EXPECT_EQ(Times(plan, 2).size(), 10u);  // Started under the budget: planned whole.
  EXPECT_TRUE(Times(plan, 3).empty());
  EXPECT_EQ(plan.held_back, 1);
  ASSERT_EQ(plan.next.size(), 2u);
  EXPECT_EQ(plan.next[0].job_id, 1);
  EXPECT_EQ(plan.next[1].job_id, 2);
}

TEST(FirePlanTest, AdmissionAlwaysPlansTheFirstJob) {
  ClaimWindow w;
  w.max_pending_fires = 0;
  const ClaimPlan plan = PlanClaim(
      {CronJob(1, kNow + absl::Seconds(1)), CronJob(2, kNow + absl::Seconds(1))}, kNow, w);
  EXPECT_EQ(Times(plan, 1).size(), 10u);
  EXPECT_EQ(plan.held_back, 1);
}

TEST(FirePlanTest, SheddingPastTheBudgetRecordsABehindJobsSpanInOneRow) {
  ClaimWindow w;
  w.shed_past_due = true;
  w.max_pending_fires = 1;
  const ClaimPlan plan =
      PlanClaim({CronJob(1, kNow + absl::Seconds(1)), CronJob(2, kNow - absl::Seconds(2)),
                 CronJob(3, kNow + absl::Seconds(1))},
                kNow, w);
  EXPECT_EQ(Times(plan, 1).size(), 10u);  // Admitted.
  // Behind: now-2 .. now+4 shed in one row (the span is 5 s), nothing PENDING, back at now+5.
  ASSERT_EQ(Times(plan, 2).size(), 1u);
  const PlannedFire& row = plan.fires[10];
  EXPECT_TRUE(row.skipped);
  EXPECT_EQ(row.scheduled, kNow - absl::Seconds(2));
  EXPECT_TRUE(absl::StartsWith(row.reason, "misfire: 7 fire(s) from ")) << row.reason;
  EXPECT_EQ(plan.shed, 7);
  // Not yet due: left as it is.
  EXPECT_TRUE(Times(plan, 3).empty());
  EXPECT_EQ(plan.held_back, 1);
  ASSERT_EQ(plan.next.size(), 2u);
  EXPECT_EQ(plan.next[1].job_id, 2);
  EXPECT_EQ(plan.next[1].next, kNow + absl::Seconds(5));
}

TEST(MisfireRangeTest, TheCountReadsBackFromTheReason) {
  const std::string reason =
      absl::StrCat(MisfireRange(60, kNow, kNow + absl::Seconds(59)), " skipped (DO_NOTHING)");
  EXPECT_EQ(MisfireRangeCount(reason), 60);
  EXPECT_EQ(MisfireRangeCount("late: 3 pending fire(s) from a to b"), std::nullopt);
  EXPECT_EQ(MisfireRangeCount("misfire: x fire(s)"), std::nullopt);
  EXPECT_EQ(MisfireRangeCount("misfire: 0 fire(s)"), std::nullopt);
}

TEST(MisfireRangeTest, ParseReadsBackWhatMisfireRangeWrote) {
  const absl::Time first = kNow + absl::Milliseconds(250);
  const absl::Time last = first + absl::Seconds(59);
  const std::optional<MisfireRangeParts> parts = ParseMisfireRange(
      absl::StrCat(MisfireRange(60, first, last), " skipped (DO_NOTHING); 3 more queued"));
  ASSERT_TRUE(parts.has_value());
  EXPECT_EQ(parts->count, 60);
  EXPECT_EQ(parts->first, first);
  EXPECT_EQ(parts->last, last);
  const std::optional<MisfireRangeParts> bare = ParseMisfireRange(MisfireRange(1, kNow, kNow));
  ASSERT_TRUE(bare.has_value());
  EXPECT_EQ(bare->count, 1);
  EXPECT_EQ(bare->first, kNow);
  EXPECT_EQ(bare->last, kNow);
}

TEST(MisfireRangeTest, ParseRejectsOtherText) {
  EXPECT_EQ(ParseMisfireRange("paused before they were claimed"), std::nullopt);
  EXPECT_EQ(ParseMisfireRange("misfire: 0 fire(s) from 2026-01-01T00:00:00Z to "
                              "2026-01-01T00:00:00Z"),
            std::nullopt);
  EXPECT_EQ(ParseMisfireRange("misfire: 2 fire(s) from yesterday to 2026-01-01T00:00:00Z"),
            std::nullopt);
  EXPECT_EQ(ParseMisfireRange("misfire: 2 fire(s) from 2026-01-01T00:00:00Z"), std::nullopt);
  // First after last is not a range.
  EXPECT_EQ(ParseMisfireRange(MisfireRange(2, kNow + absl::Seconds(1), kNow)), std::nullopt);
}

}  // namespace
}  // namespace jobwheel::scheduler
