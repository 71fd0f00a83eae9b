#include "bench/sampling.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iterator>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace jobwheel::bench {
namespace {

std::string ReadWhole(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

absl::StatusOr<ProcStat> ReadProcStat(pid_t pid) {
  const std::string text = ReadWhole(absl::StrCat("/proc/", pid, "/stat"));
  if (text.empty()) return absl::NotFoundError(absl::StrCat("no process ", pid));
  return ParseProcStat(text);
}

}  // namespace

absl::StatusOr<ProcStat> ParseProcStat(absl::string_view text) {
  // Fields after the command name start after the last ')'.
  const size_t close = text.rfind(')');
  if (close == absl::string_view::npos || close + 2 > text.size()) {
    return absl::InvalidArgumentError("bad /proc/pid/stat");
  }
  std::vector<absl::string_view> f = absl::StrSplit(text.substr(close + 2), ' ', absl::SkipEmpty());
  // f[0] is field 3 (state), f[1] field 4 (ppid); utime and stime are fields 14 and 15.
  ProcStat s;
  if (f.size() < 13 || !absl::SimpleAtoi(f[1], &s.ppid) ||
      !absl::SimpleAtoi(f[11], &s.utime_ticks) || !absl::SimpleAtoi(f[12], &s.stime_ticks)) {
    return absl::InvalidArgumentError("bad /proc/pid/stat");
  }
  return s;
}

absl::StatusOr<ProcSample> ReadProc(pid_t pid) {
  absl::StatusOr<ProcStat> stat = ReadProcStat(pid);
  if (!stat.ok()) return stat.status();
  ProcSample s;
  s.cpu_seconds = static_cast<double>(stat->utime_ticks + stat->stime_ticks) / sysconf(_SC_CLK_TCK);
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(status, line)) {
    absl::string_view v(line);
    int64_t* target = nullptr;
    if (absl::ConsumePrefix(&v, "VmRSS:")) target = &s.rss_kb;
    if (absl::ConsumePrefix(&v, "VmHWM:")) target = &s.peak_rss_kb;
    if (target == nullptr) continue;
    v = absl::StripAsciiWhitespace(v);
    absl::ConsumeSuffix(&v, " kB");
    (void)absl::SimpleAtoi(v, target);
  }
  return s;
}

bool ResetPeakRss(pid_t pid) {
  std::ofstream out(absl::StrCat("/proc/", pid, "/clear_refs"));
  if (!out) return false;
  out << "5\n";
  return static_cast<bool>(out);
}

std::vector<pid_t> ChildrenOf(pid_t parent) {
  std::vector<pid_t> out;
  DIR* dir = opendir("/proc");
  if (dir == nullptr) return out;
  while (dirent* e = readdir(dir)) {
    pid_t pid = 0;
    if (!absl::SimpleAtoi(e->d_name, &pid)) continue;
    absl::StatusOr<ProcStat> s = ReadProcStat(pid);
    if (s.ok() && s->ppid == parent) out.push_back(pid);
  }
  closedir(dir);
  return out;
}

std::vector<pid_t> PostgresPids(const std::string& pg_data) {
  std::vector<pid_t> out;
  if (pg_data.empty()) return out;
  std::ifstream in(pg_data + "/postmaster.pid");
  pid_t postmaster = 0;
  if (!(in >> postmaster) || postmaster <= 0) return out;
  out.push_back(postmaster);
  for (pid_t c : ChildrenOf(postmaster)) out.push_back(c);
  return out;
}

std::string LoadAvg() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return absl::StrCat(a, "/", b, "/", c);
}

Samples SampleAll(const ProcSet& set) {
  Samples out;
  for (const auto& [name, pids] : set) {
    for (pid_t p : pids) {
      absl::StatusOr<ProcSample> s = ReadProc(p);
      if (s.ok()) out[name][p] = *s;
    }
  }
  return out;
}

void ResetPeaks(const ProcSet& set) {
  for (const auto& [name, pids] : set) {
    for (pid_t p : pids) ResetPeakRss(p);
  }
}

std::vector<ComponentUsage> Usage(const Samples& before, const Samples& after) {
  std::vector<ComponentUsage> out;
  for (const auto& [name, procs] : after) {
    ComponentUsage u;
    u.name = name;
    u.rss_is_sum = name == "postgres";
    auto b = before.find(name);
    for (const auto& [pid, s] : procs) {
      double start = 0;
      if (b != before.end()) {
        auto it = b->second.find(pid);
        if (it != b->second.end()) start = it->second.cpu_seconds;
      }
      u.cpu_seconds += s.cpu_seconds - start;
      u.rss_kb = u.rss_is_sum ? u.rss_kb + s.rss_kb : std::max(u.rss_kb, s.peak_rss_kb);
    }
    out.push_back(u);
  }
  return out;
}

}  // namespace jobwheel::bench
