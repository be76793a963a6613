// Session clock calibration (src/clock/clock.h): the first calibration of a process spins, later
// ones start from the best estimate so far with a fresh reference, and Refine() replaces the
// frequency only over a longer span.
#include "clock/clock.h"

#include <gtest/gtest.h>
#include <time.h>

#include <chrono>
#include <thread>

namespace {

using hush::clock::Calibrate;
using hush::clock::Calibration;
using hush::clock::Refine;

TEST(Clock, LaterCalibrationsStartFromTheBestEstimate) {
  if (!hush::clock::TscIsInvariant())
    GTEST_SKIP() << "no invariant TSC: sessions use CLOCK_MONOTONIC";
  // The first of this process: a spin, or on aarch64 CNTFRQ_EL0 (nothing measured yet).
  Calibration first = Calibrate();
  if (hush::clock::CounterFrequency() != 0) {
    EXPECT_EQ(first.freq_source, "cntfrq");
    EXPECT_EQ(first.freq_hz, hush::clock::CounterFrequency());
    EXPECT_EQ(first.span_ns, 0u);
  } else {
    EXPECT_EQ(first.freq_source, "spin");
    EXPECT_GE(first.span_ns, 50000u);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  Refine(first);
  EXPECT_EQ(first.freq_source, "span");
  EXPECT_GE(first.span_ns, 20000000u);

  const Calibration second = Calibrate();  // no spin: the refined estimate, a new reference
  EXPECT_EQ(second.freq_source, "span");
  EXPECT_EQ(second.freq_hz, first.freq_hz);
  EXPECT_EQ(second.span_ns, first.span_ns);
  EXPECT_GT(second.ref_ticks, first.ref_ticks);
  EXPECT_GT(second.ref_mono_ns, first.ref_mono_ns);

  Calibration third = second;
  Refine(third);  // ran for less than the estimate's span: kept
  EXPECT_EQ(third.freq_hz, first.freq_hz);
  EXPECT_EQ(third.span_ns, first.span_ns);
}

// The counter named in the metadata and its stated frequency: CNTVCT_EL0 / CNTFRQ_EL0 on
// aarch64, the TSC (measured, never stated) on x86-64.
TEST(Clock, CounterIsTheArchitecturesOwn) {
#if defined(__aarch64__)
  EXPECT_STREQ(hush::clock::CounterName(), "cntvct");
  EXPECT_NE(hush::clock::CounterFrequency(), 0u) << "CNTFRQ_EL0 unprogrammed";
  EXPECT_TRUE(hush::clock::TscIsInvariant());
#else
  EXPECT_STREQ(hush::clock::CounterName(), "tsc");
  EXPECT_EQ(hush::clock::CounterFrequency(), 0u);
#endif
}

// The frequency measured over a span against CLOCK_MONOTONIC_RAW agrees with the one the
// hardware states (CNTFRQ_EL0) to 1%: the counter ticks at its stated rate, and the calibration
// measures it the way it measures the TSC.
TEST(Clock, MeasuredFrequencyMatchesTheStatedOne) {
  const std::uint64_t stated = hush::clock::CounterFrequency();
  if (stated == 0) GTEST_SKIP() << "no stated counter frequency here (x86-64: the TSC is measured)";
  Calibration c = Calibrate();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  Refine(c);
  ASSERT_EQ(c.freq_source, "span");
  EXPECT_NEAR(static_cast<double>(c.freq_hz), static_cast<double>(stated), stated * 0.01);
  // Counter -> wall clock: the offset maps the counter's present to the present to 1 ms.
  const std::uint64_t ticks = hush::clock::Now(true);
  const long double wall_ns =
      c.offset_s * 1e9L + (c.offset_cycles + static_cast<long double>(ticks)) * 1e9L / c.freq_hz;
  timespec rt;
  ::clock_gettime(CLOCK_REALTIME, &rt);
  const long double now_ns = rt.tv_sec * 1e9L + rt.tv_nsec;
  EXPECT_NEAR(static_cast<double>(wall_ns - now_ns), 0.0, 1e6);
}

}  // namespace
