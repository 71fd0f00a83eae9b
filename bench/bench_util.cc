#include "bench/bench_util.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace jobwheel::bench {

Percentiles ComputePercentiles(std::vector<double>& values) {
  Percentiles p;
  p.n = values.size();
  if (values.empty()) return p;
  std::sort(values.begin(), values.end());
  auto rank = [&](double q) {
    // Nearest rank: the smallest value with at least q of the sample at or below it.
    size_t k = static_cast<size_t>(std::ceil(q * values.size()));
    return values[std::min(values.size() - 1, k == 0 ? 0 : k - 1)];
  };
  p.p50 = rank(0.50);
  p.p90 = rank(0.90);
  p.p99 = rank(0.99);
  p.p999 = rank(0.999);
  p.max = values.back();
  double sum = 0;
  for (double v : values) sum += v;
  p.mean = sum / values.size();
  return p;
}

std::vector<RunRecord> ParseRecords(absl::string_view text) {
  std::vector<RunRecord> out;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    std::vector<absl::string_view> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (f.size() != 6) continue;
    RunRecord r;
    if (!absl::SimpleAtoi(f[0], &r.run_id) || !absl::SimpleAtoi(f[1], &r.job_id) ||
        !absl::SimpleAtoi(f[2], &r.fire_id) || !absl::SimpleAtoi(f[3], &r.attempt) ||
        !absl::SimpleAtoi(f[4], &r.scheduled_us) || !absl::SimpleAtoi(f[5], &r.received_us)) {
      continue;
    }
    out.push_back(r);
  }
  return out;
}

absl::StatusOr<ProcSample> ReadProc(pid_t pid) {
  ProcSample s;
  {
    std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (stat.empty()) return absl::NotFoundError(absl::StrCat("no process ", pid));
    // Fields after the command name (which may hold spaces) start after the last ')'.
    const size_t close = stat.rfind(')');
    if (close == std::string::npos) return absl::InternalError("bad /proc/pid/stat");
    std::vector<absl::string_view> f =
        absl::StrSplit(absl::string_view(stat).substr(close + 2), ' ', absl::SkipEmpty());
    // f[0] is field 3 (state); utime and stime are fields 14 and 15.
    int64_t utime = 0, stime = 0;
    if (f.size() < 13 || !absl::SimpleAtoi(f[11], &utime) || !absl::SimpleAtoi(f[12], &stime)) {
      return absl::InternalError("bad /proc/pid/stat");
    }
    s.cpu_seconds = static_cast<double>(utime + stime) / sysconf(_SC_CLK_TCK);
  }
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
    std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::vector<absl::string_view> f =
        absl::StrSplit(absl::string_view(stat).substr(close + 2), ' ', absl::SkipEmpty());
    pid_t ppid = 0;
    if (f.size() > 1 && absl::SimpleAtoi(f[1], &ppid) && ppid == parent) out.push_back(pid);
  }
  closedir(dir);
  return out;
}

absl::StatusOr<std::string> HttpGet(int port, absl::string_view path, int timeout_ms) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError(absl::StrCat("socket: ", strerror(errno)));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return absl::UnavailableError(absl::StrCat("connect 127.0.0.1:", port, ": ", strerror(errno)));
  }
  const std::string request = absl::StrCat("GET ", path, " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
  if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(request.size())) {
    close(fd);
    return absl::UnavailableError("send failed");
  }
  std::string response;
  char buf[16384];
  while (true) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, timeout_ms) <= 0) {
      close(fd);
      return absl::DeadlineExceededError(absl::StrCat("GET 127.0.0.1:", port, path));
    }
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n < 0) {
      close(fd);
      return absl::UnavailableError(absl::StrCat("recv: ", strerror(errno)));
    }
    if (n == 0) break;
    response.append(buf, n);
  }
  close(fd);
  const size_t body = response.find("\r\n\r\n");
  if (body == std::string::npos) return absl::InternalError("malformed HTTP response");
  return response.substr(body + 4);
}

absl::optional<double> MetricSum(absl::string_view body, absl::string_view name) {
  absl::optional<double> sum;
  for (absl::string_view line : absl::StrSplit(body, '\n')) {
    if (line.empty() || line[0] == '#') continue;
    if (!absl::ConsumePrefix(&line, name)) continue;
    if (line.empty() || (line[0] != ' ' && line[0] != '{')) continue;  // A longer name.
    const size_t space = line.rfind(' ');
    if (space == absl::string_view::npos) continue;
    double v = 0;
    if (!absl::SimpleAtod(line.substr(space + 1), &v)) continue;
    sum = sum.value_or(0) + v;
  }
  return sum;
}

std::string Fixed(double value, int digits) { return absl::StrFormat("%.*f", digits, value); }

}  // namespace jobwheel::bench
