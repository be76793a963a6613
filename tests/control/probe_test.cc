// User probes (include/hushtrace/probe.h): exact counts with and without a session, payloads,
// and a torture test mixing emitting threads, sessions starting and stopping, probes added and
// removed, and a module dlopen()ed and dlclose()d (run under TSan in `make test`).
#include <hushtrace/hushtrace.h>
#include <hushtrace/probe.h>
#include <hushtrace/reader.h>
#include <hushtrace/session.h>
#include <dlfcn.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "cli/cli_test_util.h"

HUSH_TRACEPOINT(prb, tick, (std::uint32_t, seq), (std::uint64_t, value))
HUSH_TRACEPOINT(prb, bg, (std::uint32_t, seq))
HUSH_TRACEPOINT(prb, flip, (std::uint32_t, seq))

namespace {

struct Tally {
  std::atomic<std::uint64_t> calls{0};
  std::atomic<std::uint64_t> value_sum{0};
  std::atomic<bool> bad_name{false};
};

void CountTick(const hush::ProbeEvent& e, void* data) {
  auto* t = static_cast<Tally*>(data);
  if (std::strcmp(e.name, "prb:tick") != 0 || e.payload_size != 12) {
    t->bad_name.store(true, std::memory_order_relaxed);
    return;
  }
  std::uint64_t value;
  std::memcpy(&value, static_cast<const char*>(e.payload) + 4, 8);
  t->calls.fetch_add(1, std::memory_order_relaxed);
  t->value_sum.fetch_add(value, std::memory_order_relaxed);
}

void Count(const hush::ProbeEvent&, void* data) {
  static_cast<std::atomic<std::uint64_t>*>(data)->fetch_add(1, std::memory_order_relaxed);
}

std::uint64_t CountEvents(const std::string& dir, const std::string& name, std::string* error) {
  auto trace = hush::reader::Trace::Open(dir, error);
  if (!trace) return 0;
  hush::reader::EventIterator it(*trace);
  std::uint64_t n = 0;
  while (it.Next()) n += it.event().name() == name ? 1 : 0;
  *error = it.error();
  return n;
}

TEST(ProbeTest, CountsExactlyWhileAttachedWithoutSession) {
  HUSH_TRACE(prb, tick, 0u, std::uint64_t{1000});  // before: not counted
  Tally tally;
  std::size_t matched = 0;
  const hush::ProbeHandle h = hush::AddProbe("prb:ti*", CountTick, &tally, &matched);
  ASSERT_NE(h, 0u);
  EXPECT_EQ(matched, 1u);
  for (std::uint32_t i = 0; i < 1000; ++i) HUSH_TRACE(prb, tick, i, std::uint64_t{i});
  HUSH_TRACE(prb, bg, 1u);  // another event: not given to this probe
  EXPECT_TRUE(hush::RemoveProbe(h));
  HUSH_TRACE(prb, tick, 0u, std::uint64_t{1000});  // after: not counted
  EXPECT_FALSE(hush::RemoveProbe(h));
  EXPECT_FALSE(tally.bad_name.load());
  EXPECT_EQ(tally.calls.load(), 1000u);
  EXPECT_EQ(tally.value_sum.load(), 999u * 1000u / 2);
  EXPECT_EQ(hush::AddProbe(nullptr, CountTick, &tally), 0u);
  EXPECT_EQ(hush::AddProbe("prb:*", nullptr, &tally), 0u);
}

TEST(ProbeTest, RecorderAndProbesSeeTheSameEvents) {
  const std::string root = hush::clitest::MakeTempDir();
  std::atomic<std::uint64_t> a{0}, b{0};
  const hush::ProbeHandle ha = hush::AddProbe("prb:tick", Count, &a);
  hush::SessionOptions o;
  o.events = {"prb:*"};
  o.output_dir = root + "/t";
  std::string error;
  auto session = hush::Session::Start(o, &error);
  ASSERT_TRUE(session) << error;
  const hush::ProbeHandle hb = hush::AddProbe("prb:*", Count, &b);  // while recording
  for (std::uint32_t i = 0; i < 500; ++i) {
    HUSH_TRACE(prb, tick, i, std::uint64_t{i});
    HUSH_TRACE(prb, bg, i);
  }
  EXPECT_TRUE(hush::RemoveProbe(ha));
  for (std::uint32_t i = 0; i < 100; ++i) HUSH_TRACE(prb, bg, i);  // recorded, b only
  session->Stop();
  for (std::uint32_t i = 0; i < 10; ++i) HUSH_TRACE(prb, bg, i);  // not recorded, b only
  EXPECT_TRUE(hush::RemoveProbe(hb));
  EXPECT_EQ(a.load(), 500u);
  EXPECT_EQ(b.load(), 1110u);
  EXPECT_EQ(CountEvents(o.output_dir, "prb:tick", &error), 500u);
  EXPECT_EQ(error, "");
  EXPECT_EQ(CountEvents(o.output_dir, "prb:bg", &error), 600u);
  hush::clitest::RemoveTree(root);
}

// Two threads emit prb:bg (recorded by a session that runs throughout) and prb:flip (not
// recorded) without pause; one thread attaches and detaches probes on prb:flip (its state word
// flips between 0 and the probe slot, its sites are patched and un-patched), prb:bg (recorded and
// probed: the list changes under the recorder) and the module's events; one thread dlopen()s the
// module, calls it and dlclose()s it. Checks: the trace reads back without error and holds every
// prb:bg event not counted as discarded; a probe attached around a known number of prb:tick
// events emitted by the checking thread alone counts exactly those.
TEST(ProbeTest, Torture) {
  const std::string root = hush::clitest::MakeTempDir();
  hush::SessionOptions o;
  o.events = {"prb:bg"};
  o.output_dir = root + "/t";
  o.buffer_size = 256 * 1024;
  std::string error;
  auto session = hush::Session::Start(o, &error);
  ASSERT_TRUE(session) << error;
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> bg_emitted{0}, bg_probe{0}, flip_probe{0}, mod_probe{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&] {
      std::uint32_t i = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        HUSH_TRACE(prb, bg, i);
        HUSH_TRACE(prb, flip, i);
        ++i;
      }
      bg_emitted.fetch_add(i);
    });
  }
  threads.emplace_back([&] {  // probes come and go
    while (!stop.load(std::memory_order_relaxed)) {
      const hush::ProbeHandle a = hush::AddProbe("prb:bg", Count, &bg_probe);
      const hush::ProbeHandle f = hush::AddProbe("prb:flip", Count, &flip_probe);
      const hush::ProbeHandle m = hush::AddProbe("prbmod:*", Count, &mod_probe);
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      EXPECT_TRUE(hush::RemoveProbe(f));
      std::this_thread::sleep_for(std::chrono::microseconds(100));
      EXPECT_TRUE(hush::RemoveProbe(a));
      EXPECT_TRUE(hush::RemoveProbe(m));
    }
  });
  threads.emplace_back([&] {  // the module comes and goes
    while (!stop.load(std::memory_order_relaxed)) {
      void* h = ::dlopen(HUSH_PROBE_MODULE, RTLD_NOW | RTLD_LOCAL);
      ASSERT_NE(h, nullptr) << ::dlerror();
      auto* emit = reinterpret_cast<int (*)(int)>(::dlsym(h, "probe_module_emit"));
      ASSERT_NE(emit, nullptr);
      emit(50);
      ::dlclose(h);
    }
  });
  // Exact counts while everything else churns: prb:tick is emitted by this thread only.
  for (int round = 0; round < 40; ++round) {
    Tally tally;
    const hush::ProbeHandle h = hush::AddProbe("prb:tick", CountTick, &tally);
    ASSERT_NE(h, 0u);
    const std::uint32_t n = 100 + static_cast<std::uint32_t>(round);
    for (std::uint32_t i = 0; i < n; ++i) HUSH_TRACE(prb, tick, i, std::uint64_t{2});
    ASSERT_TRUE(hush::RemoveProbe(h));
    HUSH_TRACE(prb, tick, 0u, std::uint64_t{2});
    EXPECT_EQ(tally.calls.load(), n);
    EXPECT_EQ(tally.value_sum.load(), 2u * n);
    EXPECT_FALSE(tally.bad_name.load());
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  stop.store(true);
  for (std::thread& t : threads) t.join();
  session->Stop();
  const hush::SessionStats stats = session->Stats();
  EXPECT_GT(bg_probe.load(), 0u);
  EXPECT_GT(flip_probe.load(), 0u);
  const std::uint64_t recorded = CountEvents(o.output_dir, "prb:bg", &error);
  EXPECT_EQ(error, "");
  EXPECT_EQ(recorded + stats.events_discarded, bg_emitted.load());
  EXPECT_EQ(CountEvents(o.output_dir, "prb:flip", &error), 0u);
  // Session stopped, every probe removed: the registry dropped its references to the module,
  // which the program closed long ago, so it is unloaded now.
  EXPECT_EQ(::dlopen(HUSH_PROBE_MODULE, RTLD_NOW | RTLD_NOLOAD), nullptr);
  hush::clitest::RemoveTree(root);
}

}  // namespace

#include <hushtrace/hushtrace_c.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

void CountC(const struct hush_c_probe_event* e, void* data) {
  if (std::strcmp(e->name, "prb:tick") == 0 && e->payload_size == 12) {
    ++*static_cast<std::uint64_t*>(data);
  }
}

// DetachProbe returns while another thread is inside the probe's callback; SynchronizeProbes
// waits for that thread to leave it.
TEST(ProbeTest, DetachDoesNotWaitSynchronizeDoes) {
  struct Gate {
    std::atomic<int> calls{0};
    std::atomic<bool> release{false};
  } gate;
  auto blocking = [](const hush::ProbeEvent&, void* data) {
    auto* g = static_cast<Gate*>(data);
    if (g->calls.fetch_add(1) != 0) return;
    while (!g->release.load()) std::this_thread::yield();
  };
  const hush::ProbeHandle h = hush::AddProbe("prb:flip", blocking, &gate);
  ASSERT_NE(h, 0u);
  std::thread inside([] { HUSH_TRACE(prb, flip, 1u); });
  while (gate.calls.load() == 0) std::this_thread::yield();
  EXPECT_TRUE(hush::DetachProbe(h));  // would never return if it waited for `inside`
  EXPECT_FALSE(hush::DetachProbe(h));
  HUSH_TRACE(prb, flip, 2u);  // this thread saw its own detach: not called
  std::atomic<bool> synced{false};
  std::thread sync([&] {
    hush::SynchronizeProbes();
    synced.store(true);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(synced.load()) << "the grace period ended while a reader was inside the callback";
  gate.release.store(true);
  inside.join();
  sync.join();
  EXPECT_TRUE(synced.load());
  EXPECT_EQ(gate.calls.load(), 1);
  hush::SynchronizeProbes();  // nothing detached since: returns at once
}

// Probes toggled by DetachProbe while two threads emit the event; each probe's data is freed
// after the SynchronizeProbes that follows its detach (ASan and TSan catch a callback that runs
// after that).
TEST(ProbeTest, DetachTorture) {
  std::atomic<bool> stop{false};
  std::vector<std::thread> emitters;
  for (int t = 0; t < 2; ++t) {
    emitters.emplace_back([&] {
      for (std::uint32_t i = 0; !stop.load(std::memory_order_relaxed); ++i) HUSH_TRACE(prb, flip, i);
    });
  }
  std::vector<std::atomic<std::uint64_t>*> pending;
  std::uint64_t counted = 0;
  for (int i = 0; i < 3000; ++i) {
    auto* data = new std::atomic<std::uint64_t>(0);
    const hush::ProbeHandle h = hush::AddProbe("prb:flip", Count, data);
    ASSERT_NE(h, 0u);
    std::this_thread::yield();
    ASSERT_TRUE(hush::DetachProbe(h));
    pending.push_back(data);
    if (i % 100 == 99) {
      hush::SynchronizeProbes();
      for (auto* d : pending) {
        counted += d->load();
        delete d;
      }
      pending.clear();
    }
  }
  stop.store(true);
  for (std::thread& t : emitters) t.join();
  hush::SynchronizeProbes();
  for (auto* d : pending) delete d;
  EXPECT_GT(counted, 0u);
}

// A fork child inherits the probes and can add and remove its own: the grace-period reader list
// holds only the forking thread there.
TEST(ProbeTest, ForkChild) {
  std::atomic<std::uint64_t> parent{0};
  const hush::ProbeHandle h = hush::AddProbe("prb:bg", Count, &parent);
  ASSERT_NE(h, 0u);
  std::thread t([] { HUSH_TRACE(prb, bg, 1u); });  // another registered reader
  t.join();
  const pid_t pid = ::fork();
  if (pid == 0) {
    std::atomic<std::uint64_t> child{0};
    const hush::ProbeHandle c = hush::AddProbe("prb:bg", Count, &child);
    for (std::uint32_t i = 0; i < 10; ++i) HUSH_TRACE(prb, bg, i);
    const bool removed = hush::RemoveProbe(c) && hush::RemoveProbe(h);
    HUSH_TRACE(prb, bg, 0u);
    ::_exit(removed && child.load() == 10 ? 0 : 1);
  }
  ASSERT_GT(pid, 0);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_TRUE(hush::RemoveProbe(h));
  EXPECT_EQ(parent.load(), 1u);
}

TEST(ProbeTest, CApi) {
  std::uint64_t count = 0;  // one emitting thread: no atomics needed
  const std::uint64_t h = hush_c_add_probe("prb:tick", CountC, &count);
  ASSERT_NE(h, 0u);
  for (std::uint32_t i = 0; i < 77; ++i) HUSH_TRACE(prb, tick, i, std::uint64_t{i});
  EXPECT_EQ(hush_c_remove_probe(h), 0);
  EXPECT_EQ(hush_c_remove_probe(h), -1);
  HUSH_TRACE(prb, tick, 0u, std::uint64_t{0});
  EXPECT_EQ(count, 77u);
  EXPECT_EQ(hush_c_add_probe(nullptr, CountC, &count), 0u);

  const std::uint64_t d = hush_c_add_probe("prb:tick", CountC, &count);
  ASSERT_NE(d, 0u);
  for (std::uint32_t i = 0; i < 5; ++i) HUSH_TRACE(prb, tick, i, std::uint64_t{i});
  EXPECT_EQ(hush_c_detach_probe(d), 0);
  EXPECT_EQ(hush_c_detach_probe(d), -1);
  HUSH_TRACE(prb, tick, 0u, std::uint64_t{0});
  hush_c_synchronize_probes();
  EXPECT_EQ(count, 82u);
}

}  // namespace
