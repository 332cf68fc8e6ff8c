// Wall-clock timing and memory figures for the tool's reports.
#pragma once

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

namespace edgeattn::cli {

/// Milliseconds one call of `fn` takes.
template <class F>
double time_ms(F&& fn) {
  const auto start = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

/// Calls `fn` once untimed (first-touch of buffers, cached graph preparation), then `repeat`
/// times; returns the median time in milliseconds, robust to a stray slow run.
template <class F>
double median_ms(int repeat, F&& fn) {
  fn();
  std::vector<double> times;
  for (int r = 0; r < repeat; ++r) times.push_back(time_ms(fn));
  std::ranges::sort(times);
  const size_t m = times.size() / 2;
  return times.size() % 2 == 1 ? times[m] : 0.5 * (times[m - 1] + times[m]);
}

/// Peak resident set size of this process so far, in MiB (getrusage's ru_maxrss is in KiB on Linux).
inline double peak_rss_mb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

/// Resident set size of this process now, in MiB (/proc/self/statm; 0 where it is unavailable).
inline double current_rss_mb() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0.0;
  long pages = 0, resident = 0;
  const int n = std::fscanf(f, "%ld %ld", &pages, &resident);
  std::fclose(f);
  return n == 2
             ? static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0)
             : 0.0;
}

}  // namespace edgeattn::cli
