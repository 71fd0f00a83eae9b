#include "bench/run_info.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "bench/sampling.h"
#include "common/base/status_macros.h"
#include "common/time/clock.h"

namespace jobwheel::bench {
namespace {

// The PostgreSQL settings a result file records.
constexpr const char* kPgSettings[] = {
    "server_version",     "fsync",
    "synchronous_commit", "wal_sync_method",
    "full_page_writes",   "checkpoint_timeout",
    "max_wal_size",       "shared_buffers",
    "max_connections",    "data_directory",
};

// The first line `command` prints (stderr discarded); empty on failure.
std::string FirstLine(const std::string& command) {
  std::FILE* p = popen((command + " 2>/dev/null").c_str(), "r");
  if (p == nullptr) return "";
  char buf[512];
  std::string out;
  if (std::fgets(buf, sizeof(buf), p) != nullptr) out = buf;
  pclose(p);
  return std::string(absl::StripAsciiWhitespace(out));
}

std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

Report MachineReport(const BenchOptions& options) {
  std::ifstream cpu("/proc/cpuinfo");
  std::string line, model;
  while (std::getline(cpu, line)) {
    if (line.rfind("model name", 0) == 0) {
      model = line.substr(line.find(':') + 2);
      break;
    }
  }
  Report m;
  m.Add("cpus", static_cast<int64_t>(sysconf(_SC_NPROCESSORS_ONLN)));
  m.AddText("model", model);
  m.Add("mem_gb", sysconf(_SC_PHYS_PAGES) * static_cast<double>(sysconf(_SC_PAGE_SIZE)) / (1 << 30),
        1);
  m.AddText("load_avg", LoadAvg());
  m.Add("executors", static_cast<int64_t>(options.executors));
  m.AddText("started",
            absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", RealClock::Get().Now(), absl::UTCTimeZone()));
  return m;
}

Report RunReport(const BenchOptions& options, BenchDb& db,
                 const std::vector<std::pair<std::string, std::string>>& flags) {
  Report r;
  r.AddText("git_commit", options.git_commit.empty() ? "unknown" : options.git_commit);
  r.AddText("app", db.app());
  r.AddText("mode", options.attached() ? "attached" : "own stack");
  std::string data_dir = options.pg_data;
  for (const char* name : kPgSettings) {
    // data_directory needs superuser or pg_read_all_settings: record what the server says.
    absl::StatusOr<pqxx::result> v = db.Query(absl::StrCat("SHOW ", name));
    const std::string value = v.ok() && !v->empty() ? (*v)[0][0].as<std::string>() : "unreadable";
    r.AddText(absl::StrCat("pg_", name), value);
    if (std::string(name) == "data_directory" && data_dir.empty() && v.ok()) data_dir = value;
  }
  if (!data_dir.empty()) {
    // `stat -f` names the file system type; `df -PT` adds the device and mount point.
    r.AddText("pg_data_fs", FirstLine("stat -f -c %T " + ShellQuote(data_dir)));
    r.AddText("pg_data_df",
              FirstLine("df -PT " + ShellQuote(data_dir) + " | tail -n 1 | tr -s ' '"));
  } else {
    r.AddText("pg_data_fs", "unknown");
  }
  Report f;
  for (const auto& [name, value] : flags) f.AddText(name, value);
  r.AddObject("flags", f);
  return r;
}

}  // namespace jobwheel::bench
