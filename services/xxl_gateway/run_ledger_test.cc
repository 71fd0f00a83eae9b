#include "services/xxl_gateway/run_ledger.h"

#include <sys/stat.h>

#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "services/xxl_gateway/state_dir.h"

namespace jobwheel::xxl {
namespace {

std::string TempDir(const std::string& name) {
  const char* base = std::getenv("TEST_TMPDIR");
  return absl::StrCat(base != nullptr ? base : "/tmp", "/", name);
}

TEST(RunLedgerTest, RecordsSurviveARestartAndPruneForgetsSettledOnes) {
  StateDir state(TempDir("ledger"));
  ASSERT_TRUE(state.Open().ok());
  {
    RunLedger ledger(state);
    RunRecord running;
    running.set_run_id(1);
    running.set_identity("demo http://h:1");
    running.set_state(RUN_STATE_RUNNING);
    running.set_result_key("k");
    ASSERT_TRUE(ledger.Put(running, RunLedger::Durability::kSynced).ok());
    RunRecord done;
    done.set_run_id(2);
    done.set_state(RUN_STATE_ENDED);
    done.set_reported(true);
    done.set_end_ms(1000);
    ASSERT_TRUE(ledger.Put(done, RunLedger::Durability::kWritten).ok());
  }
  RunLedger again(state);
  ASSERT_TRUE(again.Load().ok());
  ASSERT_TRUE(again.Get(1).has_value());
  EXPECT_EQ(again.Get(1)->result_key(), "k");
  EXPECT_EQ(again.OfIdentity("demo http://h:1").size(), 1u);
  EXPECT_EQ(again.Prune(absl::FromUnixMillis(2000)), 1);
  EXPECT_FALSE(again.Get(2).has_value());
  EXPECT_TRUE(again.Get(1).has_value());  // Still running: kept.
  RunLedger third(state);
  ASSERT_TRUE(third.Load().ok());
  EXPECT_EQ(third.size(), 1u);
}

TEST(StateDirTest, IdentityRecordsAreOwnerOnly) {
  StateDir state(TempDir("ids"));
  ASSERT_TRUE(state.Open().ok());
  IdentityRecord r;
  r.set_app("demo");
  r.set_url("http://h:1");
  r.set_port(7300);
  r.set_token("secret");
  ASSERT_TRUE(state.SaveIdentity(r).ok());
  auto all = state.LoadIdentities();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ((*all)[0].token(), "secret");
  const std::string path = absl::StrCat(TempDir("ids"), "/identities/",
                                        Sha256Hex(IdentityKey("demo", "http://h:1")), ".pb");
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600);
  ASSERT_EQ(stat(TempDir("ids").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700);
}

}  // namespace
}  // namespace jobwheel::xxl
