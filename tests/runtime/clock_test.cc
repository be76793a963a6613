// Session clock calibration (src/clock/clock.h): the first calibration of a process spins, later
// ones start from the best estimate so far with a fresh reference, and Refine() replaces the
// frequency only over a longer span.
#include "clock/clock.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace {

using hush::clock::Calibrate;
using hush::clock::Calibration;
using hush::clock::Refine;

TEST(Clock, LaterCalibrationsStartFromTheBestEstimate) {
  if (!hush::clock::TscIsInvariant()) GTEST_SKIP() << "no invariant TSC: sessions use CLOCK_MONOTONIC";
  Calibration first = Calibrate();  // the first of this process: a spin
  EXPECT_EQ(first.freq_source, "spin");
  EXPECT_GE(first.span_ns, 50000u);
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

}  // namespace
