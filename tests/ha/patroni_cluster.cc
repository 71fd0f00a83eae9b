#include "tests/ha/patroni_cluster.h"

#include <sys/wait.h>

#include <cstdio>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/testing/process.h"

namespace jobwheel::testing {

std::string Shell(const std::string& command, int* exit_code) {
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) {
    *exit_code = -1;
    return out;
  }
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) out.append(buf, n);
  const int status = pclose(pipe);
  *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return std::string(absl::StripTrailingAsciiWhitespace(out));
}

double MetricValue(const std::string& text, const std::string& series) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::ConsumePrefix(&line, series) || !absl::ConsumePrefix(&line, " ")) continue;
    double v = 0;
    if (absl::SimpleAtod(line, &v)) return v;
  }
  return -1;
}

PatroniCluster::PatroniCluster()
    : script_(RunfilePath("scripts/lib/patroni.sh")), dir_(TestTempDir("patroni")) {}

PatroniCluster::~PatroniCluster() {
  if (!started_) return;
  int rc = 0;
  Shell(absl::StrCat("bash ", script_, " stop ", dir_, " 2>&1"), &rc);
}

absl::Status PatroniCluster::Start(int members, const std::string& mode) {
  int rc = 0;
  started_ = true;  // Whatever the script started is stopped, even after a failure.
  const std::string out =
      Shell(absl::StrCat("bash ", script_, " start ", dir_, " ", members, " ", mode, " 2>&1"), &rc);
  if (rc == 77) return absl::FailedPreconditionError(out);
  if (rc != 0) return absl::InternalError(out);
  // The DSN is the last line.
  const size_t nl = out.rfind('\n');
  dsn_ = nl == std::string::npos ? out : out.substr(nl + 1);
  return absl::OkStatus();
}

std::string PatroniCluster::Run(const std::string& verb, bool* ok, const std::string& after) {
  int rc = 0;
  std::string out =
      Shell(absl::StrCat("bash ", script_, " ", verb, " ", dir_, " ", after, " 2>&1"), &rc);
  *ok = rc == 0;
  return out;
}

std::string PatroniCluster::Logs() {
  int rc = 0;
  return Shell(absl::StrCat("tail -n 30 ", dir_, "/pg*/patroni.log 2>&1"), &rc);
}

}  // namespace jobwheel::testing
