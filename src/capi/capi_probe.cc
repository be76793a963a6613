// hush_c_add_probe / hush_c_remove_probe / hush_c_detach_probe (include/hushtrace/hushtrace_c.h):
// each C probe is a C++ probe whose data is a small record holding the C callback and its data,
// freed once a grace period has passed after its detach (RemoveProbe's own, or the
// SynchronizeProbes of hush_c_synchronize_probes).
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <vector>

#include "hushtrace/hushtrace_c.h"
#include "hushtrace/probe.h"

namespace {

struct CProbe {
  hush_c_probe_callback callback;
  void* data;
};

std::mutex g_mu;  // guards Probes() and Detached(); never held while a callback may run
std::map<hush::ProbeHandle, std::unique_ptr<CProbe>>& Probes() {
  static auto* probes = new std::map<hush::ProbeHandle, std::unique_ptr<CProbe>>();
  return *probes;
}
// Records of detached probes: a callback may still use them until the next SynchronizeProbes.
std::vector<std::unique_ptr<CProbe>>& Detached() {
  static auto* detached = new std::vector<std::unique_ptr<CProbe>>();
  return *detached;
}

void CallC(const hush::ProbeEvent& e, void* data) {
  const auto* p = static_cast<const CProbe*>(data);
  const hush_c_probe_event event{e.name, e.payload, e.payload_size};
  p->callback(&event, p->data);
}

}  // namespace

extern "C" {

uint64_t hush_c_add_probe(const char* glob, hush_c_probe_callback callback, void* data) noexcept {
  if (glob == nullptr || callback == nullptr) return 0;
  std::unique_ptr<CProbe> p(new (std::nothrow) CProbe{callback, data});
  if (!p) return 0;
  try {
    const hush::ProbeHandle h = hush::AddProbe(glob, CallC, p.get());
    if (h == 0) return 0;
    std::lock_guard<std::mutex> lock(g_mu);
    Probes().emplace(h, std::move(p));
    return h;
  } catch (...) {
    return 0;
  }
}

int hush_c_remove_probe(uint64_t handle) noexcept {
  try {
    if (!hush::RemoveProbe(handle)) return -1;
    std::lock_guard<std::mutex> lock(g_mu);
    Probes().erase(handle);  // after the grace period: no call of CallC uses it any more
    return 0;
  } catch (...) {
    return -1;
  }
}

int hush_c_detach_probe(uint64_t handle) noexcept {
  try {
    if (!hush::DetachProbe(handle)) return -1;
    std::lock_guard<std::mutex> lock(g_mu);
    const auto it = Probes().find(handle);
    if (it != Probes().end()) {
      Detached().push_back(std::move(it->second));
      Probes().erase(it);
    }
    return 0;
  } catch (...) {
    return -1;
  }
}

void hush_c_synchronize_probes(void) noexcept {
  try {
    std::vector<std::unique_ptr<CProbe>> done;
    {
      // Taken before the grace period: records detached meanwhile wait for the next one.
      std::lock_guard<std::mutex> lock(g_mu);
      done.swap(Detached());
    }
    try {
      hush::SynchronizeProbes();
    } catch (...) {
      for (auto& p : done) static_cast<void>(p.release());  // no grace period: leak, never free
    }
  } catch (...) {
  }
}

}  // extern "C"
