#ifndef JOBWHEEL_SERVICES_XXL_GATEWAY_STATE_DIR_H_
#define JOBWHEEL_SERVICES_XXL_GATEWAY_STATE_DIR_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "jobwheel/xxl/gateway_state.pb.h"

namespace jobwheel::xxl {

// The gateway's durable state in --state_dir: one file per identity
// (identities/<sha256 of key>.pb), written whole to a temporary file, synced and renamed, so a
// crash leaves the old or the new record, never half of one. The runs are in the journal
// runs.journal beside it (RunJournal, written by the RunLedger). The directories are 0700 and
// the files 0600 (identity records hold the XXL executors' tokens). An empty `dir` keeps
// nothing (tests). Thread-safe (no shared state but the file system).
class StateDir {
 public:
  explicit StateDir(std::string dir) : dir_(std::move(dir)) {}

  // Creates the directories (0700); INVALID_ARGUMENT naming --state_dir when it cannot.
  absl::Status Open();

  absl::Status SaveIdentity(const IdentityRecord& record);
  absl::StatusOr<std::vector<IdentityRecord>> LoadIdentities() const;

  const std::string& dir() const { return dir_; }

 private:
  absl::Status WriteWhole(const std::string& path, const std::string& bytes) const;

  const std::string dir_;
};

// "<app> <url base>": what names an identity.
std::string IdentityKey(absl::string_view app, absl::string_view url_base);
// Lower-case hex SHA-256 of `data`.
std::string Sha256Hex(absl::string_view data);

}  // namespace jobwheel::xxl

#endif  // JOBWHEEL_SERVICES_XXL_GATEWAY_STATE_DIR_H_
