// The C API (include/hushtrace/hushtrace_c.h): event emission and session control.
//
// hush_c_emit / hush_c_emitv are the out-of-line halves of the C macros. They follow EmitEvent
// (include/hushtrace/internal/emit.h) step for step: size the payload, read the cycle counter,
// raise the nesting guard, Reserve, encode, Commit, lower the guard. Strings and byte sequences
// are encoded exactly as hush::internal::StringField / FieldTraits<std::span<const std::byte>>
// do (NULL -> "(null)", 1024-byte cap with the visible marker, 64 KiB cap on bytes).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "hushtrace/hushtrace_c.h"
#include "hushtrace/internal/descriptor.h"
#include "hushtrace/internal/emit.h"
#include "hushtrace/internal/field_traits.h"
#include "hushtrace/internal/thread_writer.h"
#include "hushtrace/session.h"

// The C descriptor is read by the runtime as a hush::internal::Descriptor.
static_assert(sizeof(hush_c_descriptor) == sizeof(hush::internal::Descriptor));
static_assert(alignof(hush_c_descriptor) == alignof(hush::internal::Descriptor));
static_assert(offsetof(hush_c_descriptor, state) == offsetof(hush::internal::Descriptor, state));
static_assert(offsetof(hush_c_descriptor, meta) == offsetof(hush::internal::Descriptor, meta));
static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t) &&
              std::atomic<std::uint32_t>::is_always_lock_free);

namespace hush::capi {
namespace {

// At most 16 fields give at most 16 variable pieces and 17 runs of fixed fields.
constexpr std::size_t kMaxPieces = 64;

// Emits one event whose payload is written by `write(p)` (which returns the end pointer) and is
// exactly `payload` bytes long. Same sequence as internal::EmitEvent.
template <typename Writer>
inline void EmitWith(std::uint32_t id, std::size_t payload, Writer&& write) {
  internal::ThreadWriter& w = internal::tls_writer;
  const std::uint32_t previous = internal::EnterEvent(w);
  const std::uint64_t ts = internal::ReadCycleCounter();  // inside the guard, as in EmitEvent
  if (char* p = internal::Reserve(w, previous, id, ts, payload)) [[likely]] {
    if ((id & internal::kCommitSlowBits) != 0) [[unlikely]] {
      internal::CommitSlow(w, id, p, write(p));
    } else {
      internal::Commit(w, write(p));
    }
  }
  internal::LeaveEvent(w, previous);
}

const char* StringOf(const void* data) {
  return data != nullptr ? static_cast<const char*>(data) : "(null)";
}

}  // namespace
}  // namespace hush::capi

extern "C" {

void hush_c_emit(uint32_t id, const void* payload, size_t size) noexcept {
  hush::capi::EmitWith(id, size, [&](char* p) {
    if (size != 0) std::memcpy(p, payload, size);
    return p + size;
  });
}

void hush_c_emitv(uint32_t id, const struct hush_c_piece* pieces, size_t count) noexcept {
  if (count > hush::capi::kMaxPieces) return;  // never produced by the macros
  // Encoded length of each piece's content, computed once: strings are bounded by the cap, so a
  // long string costs at most kMaxStringBytes to measure.
  std::size_t lengths[hush::capi::kMaxPieces];
  std::size_t payload = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const hush_c_piece& pc = pieces[i];
    switch (pc.kind) {
      case HUSH_C_PIECE_STR: {
        // == kMaxStringBytes: too long, truncated below.
        lengths[i] = ::strnlen(hush::capi::StringOf(pc.data), hush::kMaxStringBytes);
        payload += lengths[i] < hush::kMaxStringBytes ? lengths[i] + 1 : hush::kMaxStringBytes;
        break;
      }
      case HUSH_C_PIECE_BYTES:
        lengths[i] = pc.data != nullptr ? std::min(pc.size, hush::kMaxBytesLength) : 0;
        payload += 4 + lengths[i];
        break;
      default:
        lengths[i] = pc.size;
        payload += pc.size;
        break;
    }
  }
  hush::capi::EmitWith(id, payload, [&](char* p) {
    for (std::size_t i = 0; i < count; ++i) {
      const hush_c_piece& pc = pieces[i];
      const std::size_t n = lengths[i];
      switch (pc.kind) {
        case HUSH_C_PIECE_STR: {
          const char* s = hush::capi::StringOf(pc.data);
          if (n < hush::kMaxStringBytes) [[likely]] {
            std::memcpy(p, s, n);
            p[n] = '\0';
            p += n + 1;
          } else {
            // Cut visibly, as StringField::Write: the text ends with the marker, then the NUL.
            constexpr std::size_t kKept =
                hush::kMaxStringBytes - 1 - hush::kTruncationMarker.size();
            std::memcpy(p, s, kKept);
            std::memcpy(p + kKept, hush::kTruncationMarker.data(), hush::kTruncationMarker.size());
            p[hush::kMaxStringBytes - 1] = '\0';
            p += hush::kMaxStringBytes;
          }
          break;
        }
        case HUSH_C_PIECE_BYTES: {
          const auto len = static_cast<std::uint32_t>(n);
          std::memcpy(p, &len, sizeof len);
          p += sizeof len;
          if (n != 0) std::memcpy(p, pc.data, n);
          p += n;
          break;
        }
        default:
          if (n != 0) std::memcpy(p, pc.data, n);
          p += n;
          break;
      }
    }
    return p;
  });
}

}  // extern "C"

// ---- Session control ----------------------------------------------------------------------------

namespace hush::capi {
namespace {

std::mutex g_mu;
// The session started by hush_c_session_start(). Deliberately never destroyed at exit: the
// runtime's own atexit handler stops and flushes the active session.
Session* g_session = nullptr;
// The final totals of the last session hush_c_session_stop() stopped: what get_stats returns then.
SessionStats g_final_stats;

std::vector<std::string> SplitCsv(std::string_view s) {
  std::vector<std::string> out;
  while (true) {
    const std::size_t comma = s.find(',');
    std::string_view item = s.substr(0, comma);
    while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
    while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
    if (!item.empty()) out.emplace_back(item);
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
  }
  return out;
}

void SetError(char* buf, std::size_t len, std::string_view message) {
  if (buf == nullptr || len == 0) return;
  const std::size_t n = std::min(len - 1, message.size());
  std::memcpy(buf, message.data(), n);
  buf[n] = '\0';
}

// Whether the caller's hush_c_session_options (of its struct_size) has `field`.
#define HUSH_CAPI_HAS(o, field) \
  ((o).struct_size >= offsetof(hush_c_session_options, field) + sizeof((o).field))

int Start(const hush_c_session_options& o, char* error_buf, std::size_t error_len) {
  if (o.struct_size < offsetof(hush_c_session_options, filter)) {
    SetError(error_buf, error_len,
             "struct_size " + std::to_string(o.struct_size) +
                 " is smaller than the options of hush_c_session_start (call "
                 "hush_c_session_options_init first)");
    return -1;
  }
  SessionOptions options;
  options.events = SplitCsv(o.events_csv != nullptr ? o.events_csv : "");
  if (options.events.empty()) {
    SetError(error_buf, error_len, "no events requested");
    return -1;
  }
  if (o.output_dir != nullptr) options.output_dir = o.output_dir;
  const std::string_view m = o.mode != nullptr ? o.mode : "";
  if (m.empty() || m == "stream") {
    options.mode = Mode::kStream;
  } else if (m == "flight") {
    options.mode = Mode::kFlight;
  } else {
    SetError(error_buf, error_len, "mode '" + std::string(m) + "' is not 'stream' or 'flight'");
    return -1;
  }
  if (o.buffer_size != 0) options.buffer_size = o.buffer_size;
  if (HUSH_CAPI_HAS(o, filter) && o.filter != nullptr) options.filter = o.filter;
  if (HUSH_CAPI_HAS(o, snapshot_on_csv) && o.snapshot_on_csv != nullptr) {
    options.snapshot_on = SplitCsv(o.snapshot_on_csv);
  }
  if (HUSH_CAPI_HAS(o, snapshot_interval_ms)) options.snapshot_interval_ms = o.snapshot_interval_ms;
  if (HUSH_CAPI_HAS(o, snapshot_keep)) options.snapshot_keep = o.snapshot_keep;
  if (HUSH_CAPI_HAS(o, snapshot_after_ns)) options.snapshot_after_ns = o.snapshot_after_ns;
  if (HUSH_CAPI_HAS(o, blocking_timeout_ns)) options.blocking_timeout_ns = o.blocking_timeout_ns;
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_session != nullptr) {
    SetError(error_buf, error_len, "a session started with hush_c_session_start is running");
    return -1;
  }
  std::string error;
  std::unique_ptr<Session> session = Session::Start(options, &error);
  if (!session) {
    SetError(error_buf, error_len, error);
    return -1;
  }
  g_session = session.release();
  SetError(error_buf, error_len, "");
  return 0;
}

}  // namespace
}  // namespace hush::capi

extern "C" {

void hush_c_session_options_init(struct hush_c_session_options* o) noexcept {
  if (o == nullptr) return;
  const hush::SessionOptions defaults;
  *o = hush_c_session_options{};
  o->struct_size = sizeof *o;
  o->snapshot_interval_ms = defaults.snapshot_interval_ms;
  o->snapshot_keep = defaults.snapshot_keep;
  o->snapshot_after_ns = defaults.snapshot_after_ns;
}

int hush_c_session_start_with(const struct hush_c_session_options* o, char* error_buf,
                              size_t error_len) noexcept {
  if (o == nullptr) {
    hush::capi::SetError(error_buf, error_len, "no options (NULL)");
    return -1;
  }
  try {
    return hush::capi::Start(*o, error_buf, error_len);
  } catch (const std::exception& e) {
    hush::capi::SetError(error_buf, error_len, e.what());
    return -1;
  }
}

int hush_c_session_start(const char* events_csv, const char* output_dir, const char* mode,
                         size_t buffer_size, char* error_buf, size_t error_len) noexcept {
  hush_c_session_options o;
  hush_c_session_options_init(&o);
  o.events_csv = events_csv;
  o.output_dir = output_dir;
  o.mode = mode;
  o.buffer_size = buffer_size;
  return hush_c_session_start_with(&o, error_buf, error_len);
}

void hush_c_session_stop(void) noexcept {
  std::lock_guard<std::mutex> lock(hush::capi::g_mu);
  if (hush::capi::g_session == nullptr) return;
  hush::capi::g_session->Stop();  // writes everything committed
  hush::capi::g_final_stats = hush::capi::g_session->Stats();  // its totals, all written
  delete hush::capi::g_session;
  hush::capi::g_session = nullptr;
}

int hush_c_session_snapshot(void) noexcept {
  try {
    std::lock_guard<std::mutex> lock(hush::capi::g_mu);
    if (hush::capi::g_session == nullptr) return -1;
    return hush::capi::g_session->Snapshot() ? 0 : -1;
  } catch (const std::exception&) {
    return -1;
  }
}

int hush_c_session_get_stats(struct hush_c_session_stats* out) noexcept {
  if (out == nullptr) return -1;
  *out = {};
  std::lock_guard<std::mutex> lock(hush::capi::g_mu);
  {
    const hush::SessionStats s = hush::capi::g_session != nullptr ? hush::capi::g_session->Stats()
                                                                  : hush::capi::g_final_stats;
    out->events_written = s.events_written;
    out->events_discarded = s.events_discarded;
    out->events_overwritten = s.events_overwritten;
    out->events_lost_on_write = s.events_lost_on_write;
    out->bytes_written = s.bytes_written;
    out->rings = s.rings;
    out->enabled_events = s.enabled_events;
  }
  return 0;
}

}  // extern "C"
