// include/hushtrace/probe.h and its C equivalent: thin wrappers over the process's registry.
#include "hushtrace/probe.h"

#include "registry/registry.h"

namespace hush {

ProbeHandle AddProbe(const char* glob, ProbeCallback callback, void* data, std::size_t* matched) {
  if (matched != nullptr) *matched = 0;
  if (glob == nullptr || callback == nullptr) return 0;
  registry::Registry& r = registry::Global();
  const ProbeHandle h = r.AddProbe(glob, callback, data, matched);
  r.ClosePendingModules();  // references an earlier Stop released
  return h;
}

namespace {

bool Remove(ProbeHandle handle, bool wait) {
  if (handle == 0) return false;
  registry::Registry& r = registry::Global();
  const bool ok = r.RemoveProbe(handle, wait);
  r.ClosePendingModules();
  return ok;
}

}  // namespace

bool RemoveProbe(ProbeHandle handle) { return Remove(handle, true); }

bool DetachProbe(ProbeHandle handle) { return Remove(handle, false); }

void SynchronizeProbes() {
  registry::Registry& r = registry::Global();
  r.SynchronizeProbes();
  r.ClosePendingModules();
}

}  // namespace hush
