// Time to enable and disable an event with N static-key sites in one patch batch (src/patch),
// for N = 1, 100 and 10,000 generated sites (one noinline function per site, one event per N),
// with no other thread running ("idle") and with a thread calling every site in a loop ("busy":
// each membarrier then has to interrupt the other CPU). Also 10,000 sites patched one batch per
// site, the alternative the batch replaces.
//
//   keys_enable_bench [ROUNDS]      one JSON line per measurement on stdout
//
// The registry is driven directly (no session): Enable() stores the state words and patches, and
// DisableAll() clears them and un-patches, which is what Session::Start / Stop add to their own
// work. Times are wall-clock (steady_clock) per call; the machine is shared, so the JSON carries
// min, median and p90 over ROUNDS (default 30).
#include <hushtrace/hushtrace.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "patch/patch.h"
#include "registry/registry.h"

HUSH_TRACEPOINT(hushbench_keys, n1, (std::int32_t, x))
HUSH_TRACEPOINT(hushbench_keys, n100, (std::int32_t, x))
HUSH_TRACEPOINT(hushbench_keys, n10000, (std::int32_t, x))

namespace {

// One site per instantiation. The asm keeps identical-code folding (-fipa-icf) from merging them.
#define HUSHBENCH_SITE_FN(name, event)    \
  template <int I>                        \
  [[gnu::noinline]] int name(int x) {     \
    HUSH_TRACE(hushbench_keys, event, x); \
    asm volatile("" : "+r"(x) : "i"(I));  \
    return x;                             \
  }
HUSHBENCH_SITE_FN(Site1, n1)
HUSHBENCH_SITE_FN(Site100, n100)
HUSHBENCH_SITE_FN(Site10000, n10000)

using SiteFn = int (*)(int);

template <int... I>
constexpr std::array<SiteFn, sizeof...(I)> Table1(std::integer_sequence<int, I...>) {
  return {&Site1<I>...};
}
template <int... I>
constexpr std::array<SiteFn, sizeof...(I)> Table100(std::integer_sequence<int, I...>) {
  return {&Site100<I>...};
}
template <int... I>
constexpr std::array<SiteFn, sizeof...(I)> Table10000(std::integer_sequence<int, I...>) {
  return {&Site10000<I>...};
}
const auto kSites1 = Table1(std::make_integer_sequence<int, 1>{});
const auto kSites100 = Table100(std::make_integer_sequence<int, 100>{});
const auto kSites10000 = Table10000(std::make_integer_sequence<int, 10000>{});

struct Case {
  const char* event;
  const SiteFn* fns;
  std::size_t n;
};

// Calls every site of `c` until stopped.
class Caller {
 public:
  explicit Caller(const Case& c)
      : thread_([this, c] {
          int x = 0;
          while (!stop_.load(std::memory_order_relaxed)) {
            for (std::size_t i = 0; i < c.n; ++i) x += c.fns[i](x) & 1;
          }
          sink_.store(x, std::memory_order_relaxed);
        }) {}
  ~Caller() {
    stop_.store(true);
    thread_.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<int> sink_{0};
  std::thread thread_;
};

double Us(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double, std::micro>(d).count();
}

void Print(const char* what, const Case& c, const char* load, std::vector<double> us,
           std::uint64_t sites_per_batch) {
  std::sort(us.begin(), us.end());
  const auto at = [&](double q) { return us[std::min(us.size() - 1, std::size_t(q * us.size()))]; };
  std::printf(
      "{\"op\":\"%s\",\"event\":\"%s\",\"sites\":%zu,\"load\":\"%s\",\"rounds\":%zu,"
      "\"sites_written_per_call\":%llu,\"min_us\":%.1f,\"median_us\":%.1f,\"p90_us\":%.1f}\n",
      what, c.event, c.n, load, us.size(), static_cast<unsigned long long>(sites_per_batch),
      us.front(), at(0.5), at(0.9));
  std::fflush(stdout);
}

void Measure(hush::registry::Registry& registry, const Case& c, const char* load, int rounds) {
  std::vector<double> enable, disable;
  std::uint64_t written = 0;
  for (int r = 0; r < rounds; ++r) {
    const std::uint64_t before = hush::patch::GetStats().sites_written;
    const auto t0 = std::chrono::steady_clock::now();
    registry.Enable({c.event});
    const auto t1 = std::chrono::steady_clock::now();
    written = hush::patch::GetStats().sites_written - before;
    registry.DisableAll();
    const auto t2 = std::chrono::steady_clock::now();
    enable.push_back(Us(t1 - t0));
    disable.push_back(Us(t2 - t1));
  }
  Print("enable", c, load, enable, written);
  Print("disable", c, load, disable, written);
}

// The same sites, one batch (3 membarriers) per site.
void MeasureOneByOne(hush::registry::Registry& registry, const Case& c, const char* load) {
  std::vector<hush::patch::Site> sites;
  for (const hush::registry::Event& e : registry.events()) {
    if (e.meta.FullName() == c.event) sites = e.sites;
  }
  const std::uint64_t before = hush::patch::GetStats().sites_written;
  const auto t0 = std::chrono::steady_clock::now();
  for (const hush::patch::Site& s : sites) hush::patch::SetSites({&s, 1}, true);
  const auto t1 = std::chrono::steady_clock::now();
  const std::uint64_t written = hush::patch::GetStats().sites_written - before;
  for (const hush::patch::Site& s : sites) hush::patch::SetSites({&s, 1}, false);
  const auto t2 = std::chrono::steady_clock::now();
  Print("enable_one_by_one", c, load, {Us(t1 - t0)}, written);
  Print("disable_one_by_one", c, load, {Us(t2 - t1)}, written);
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 30;
  if (rounds < 1) {
    std::fprintf(stderr, "usage: %s [ROUNDS]\n", argv[0]);
    return 2;
  }
  if (!HUSH_INTERNAL_STATIC_KEYS) {
    std::fprintf(stderr, "keys_enable_bench: built with HUSH_NO_STATIC_KEYS: nothing to patch\n");
    return 3;
  }
  hush::registry::Registry registry;
  registry.Scan();
  const Case cases[] = {{"hushbench_keys:n1", kSites1.data(), kSites1.size()},
                        {"hushbench_keys:n100", kSites100.data(), kSites100.size()},
                        {"hushbench_keys:n10000", kSites10000.data(), kSites10000.size()}};
  for (const Case& c : cases) {
    for (std::size_t i = 0; i < c.n; ++i) c.fns[i](0);  // fault the pages in
    Measure(registry, c, "idle", rounds);
    {
      Caller caller(c);
      Measure(registry, c, "busy", rounds);
    }
  }
  MeasureOneByOne(registry, cases[2], "idle");
  if (hush::patch::GetStats().failed) {
    std::fprintf(stderr, "keys_enable_bench: some sites could not be patched\n");
    return 1;
  }
  return 0;
}
