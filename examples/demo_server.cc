// A small multi-threaded "server" instrumented with hushtrace, used by `make demo`.
#include <hushtrace/hushtrace.h>

#include <pthread.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

enum class Status : std::uint8_t { kOk = 0, kNotFound = 1, kError = 2 };

HUSH_TRACEPOINT(demo, request, (std::uint32_t, worker), (std::uint64_t, request_id),
                (std::string_view, path))
HUSH_TRACEPOINT(demo, response, (std::uint64_t, request_id), (Status, status), (std::uint32_t, bytes),
                (double, latency_us))

namespace {

std::uint64_t Work(std::uint64_t n) {
  std::uint64_t h = n * 0x9E3779B97F4A7C15ull;
  for (int i = 0; i < 200; ++i) h = (h ^ (h >> 29)) * 0xBF58476D1CE4E5B9ull;
  return h;
}

void Worker(std::uint32_t worker, int requests) {
  const std::string name = "worker-" + std::to_string(worker);
  pthread_setname_np(pthread_self(), name.c_str());
  static const char* kPaths[] = {"/index.html", "/api/users", "/api/orders", "/static/app.js"};
  for (int i = 0; i < requests; ++i) {
    const std::uint64_t id = (std::uint64_t{worker} << 32) | static_cast<std::uint32_t>(i);
    const auto start = std::chrono::steady_clock::now();
    HUSH_TRACE(demo, request, worker, id, std::string_view(kPaths[i % 4]));
    std::uint64_t h;
    {
      HUSH_SPAN(demo, handle);
      h = Work(id);
      HUSH_COUNTER(demo, queue_depth, static_cast<double>(i % 17));
    }
    const Status status = (h % 10 == 0) ? Status::kNotFound : Status::kOk;
    const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    HUSH_TRACE(demo, response, id, status, static_cast<std::uint32_t>(h % 4096), us);
    if (i % 1000 == 999) HUSH_INSTANT(demo, checkpoint);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int requests = argc > 1 ? std::atoi(argv[1]) : 20000;
  std::vector<std::thread> threads;
  for (std::uint32_t w = 0; w < 4; ++w) threads.emplace_back(Worker, w, requests);
  for (auto& t : threads) t.join();
  std::printf("demo_server: handled %d requests on 4 workers\n", requests * 4);
  return 0;
}
