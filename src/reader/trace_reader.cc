// Trace::Open: metadata, stream files and a pass over every packet header (statistics, threads,
// structural errors) before any event is decoded.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

#include "base/dir_stream.h"
#include "base/read_at.h"
#include "base/unique_fd.h"
#include "format/numbered_name.h"
#include "hushtrace/reader.h"
#include "reader/metadata_parser.h"
#include "reader/stream_decoder.h"

namespace hush::reader {
namespace {

using internal::TraceData;

constexpr std::uint64_t kMaxMetadataBytes = 16 << 20;

bool ReadMetadataFile(const std::string& path, std::string* text, std::string* error) {
  // O_NONBLOCK: a FIFO must not block.
  const base::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (!fd) {
    *error = path + ": cannot open: " + std::strerror(errno) +
             (errno == ENOENT ? " (not a hushtrace/CTF trace directory?)" : "");
    return false;
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) ||
      static_cast<std::uint64_t>(st.st_size) > kMaxMetadataBytes) {
    *error = path + ": not a regular file of at most 16 MiB";
    return false;
  }
  text->resize(static_cast<std::size_t>(st.st_size));
  std::size_t got = 0;
  base::ReadAt(fd.get(), text->data(), text->size(), 0, &got);  // a short file: what it holds
  text->resize(got);
  return true;
}

// Walks the packet headers of one stream, read through `fd` (the mapped file's). False on a
// structural error.
bool ScanStream(TraceData& d, const internal::StreamSource& src, int fd, StreamInfo* info,
                std::map<std::uint32_t, ThreadInfo>* threads, std::string* error) {
  info->path = src.path;
  info->index = src.index;
  info->file_bytes = src.file.size();
  // Headers are read with pread, not through the mapping: internal::CheckPacketHeader says why.
  std::uint8_t header[internal::kPacketHeaderBytes];
  std::uint64_t offset = 0, expected_seq = 0;
  while (offset < src.file.size()) {
    internal::PacketInfo p;
    std::string message;
    const std::size_t want =
        static_cast<std::size_t>(std::min<std::uint64_t>(sizeof header, src.file.size() - offset));
    if (const int err = base::ReadAt(fd, header, want, offset); err != 0) {
      *error = src.path + ": byte " + std::to_string(offset) + ": cannot read the packet header (" +
               (err == base::kEndOfFile ? "the file shrank while it was read" : std::strerror(err)) + ")";
      return false;
    }
    const auto status =
        internal::CheckPacketHeader(header, src.file.size(), src.path, offset, d.parsed, &p, &message);
    if (status == internal::PacketStatus::kError) {
      *error = message;
      return false;
    }
    if (status == internal::PacketStatus::kTruncatedHeader) {
      d.warnings.push_back(message);
      info->truncated = true;
      break;
    }
    if (info->packets == 0) info->timestamp_begin = p.ts_begin;
    if (p.seq > expected_seq) info->lost_packets += p.seq - expected_seq;  // gaps: lost packets
    expected_seq = p.seq + 1;
    info->timestamp_end = std::max(info->timestamp_end, p.ts_end);
    info->events_discarded = std::max(info->events_discarded, p.discarded);
    info->events_overwritten = std::max(info->events_overwritten, p.overwritten);
    ThreadInfo& t = (*threads)[p.vtid];
    t.tid = p.vtid;
    t.name.assign(p.thread_name);
    ++t.packets;
    if (std::find(t.streams.begin(), t.streams.end(), src.index) == t.streams.end()) {
      t.streams.push_back(src.index);
    }
    ++info->packets;
    if (status == internal::PacketStatus::kTruncated) {
      d.warnings.push_back(message);
      info->truncated = true;
      break;
    }
    offset = p.packet_end;
  }
  return true;
}

}  // namespace

Trace::Trace() : data_(std::make_unique<TraceData>()) {}
Trace::~Trace() = default;

std::unique_ptr<Trace> Trace::Open(const std::string& dir_in, std::string* error) {
  std::string dir = dir_in;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) {
    *error = dir + ": cannot open trace directory: " + std::strerror(errno);
    return nullptr;
  }
  if (!S_ISDIR(st.st_mode)) {
    *error = dir + ": not a directory (a trace is a directory holding metadata and stream_N files)";
    return nullptr;
  }
  std::unique_ptr<Trace> trace(new Trace());
  TraceData& d = *trace->data_;
  d.dir = dir;

  const std::string metadata_path = dir + "/metadata";
  std::string text;
  if (!ReadMetadataFile(metadata_path, &text, error)) return nullptr;
  if (text.rfind("/* CTF 1.", 0) != 0) {
    *error = metadata_path + ": byte 0: missing the \"/* CTF 1.8 */\" signature (not CTF text metadata)";
    return nullptr;
  }
  if (!internal::ParseMetadata(text, metadata_path, &d.parsed, error)) return nullptr;
  d.classes = std::make_unique<internal::ClassTable>(d.parsed.metadata);
  d.bytes_on_disk = text.size();

  base::DirStream list = base::DirStream::Open(dir.c_str());
  if (!list) {
    *error = dir + ": cannot list directory: " + std::strerror(errno);
    return nullptr;
  }
  std::vector<std::pair<std::uint32_t, std::string>> names;
  while (const char* name = list.Next()) {
    std::uint32_t index;
    if (format::ParseNumberedName(name, format::kStreamPrefix, &index)) names.emplace_back(index, name);
  }
  std::sort(names.begin(), names.end());

  std::map<std::uint32_t, ThreadInfo> threads;
  for (const auto& [index, name] : names) {
    auto src = std::make_unique<internal::StreamSource>();
    src->path = dir + "/" + name;
    src->index = index;
    base::UniqueFd fd;
    if (!src->file.Open(src->path, error, &fd)) return nullptr;
    StreamInfo info;
    if (!ScanStream(d, *src, fd.get(), &info, &threads, error)) return nullptr;
    d.bytes_on_disk += src->file.size();
    d.packets += info.packets;
    d.streams.push_back(std::move(info));
    d.sources.push_back(std::move(src));
  }
  for (auto& [tid, t] : threads) d.threads.push_back(std::move(t));
  return trace;
}

const std::string& Trace::dir() const { return data_->dir; }
const Metadata& Trace::metadata() const { return data_->parsed.metadata; }
const std::vector<StreamInfo>& Trace::streams() const { return data_->streams; }
const std::vector<ThreadInfo>& Trace::threads() const { return data_->threads; }
const std::vector<std::string>& Trace::warnings() const { return data_->warnings; }
std::uint64_t Trace::bytes_on_disk() const { return data_->bytes_on_disk; }
std::uint64_t Trace::packets() const { return data_->packets; }

std::uint64_t Trace::events_discarded() const {
  std::uint64_t n = 0;
  for (const StreamInfo& s : data_->streams) n += s.events_discarded;
  return n;
}
std::uint64_t Trace::events_overwritten() const {
  std::uint64_t n = 0;
  for (const StreamInfo& s : data_->streams) n += s.events_overwritten;
  return n;
}

std::uint32_t Trace::pid() const {
  const std::string_view v = metadata().Env("vpid");
  std::uint64_t n = 0;
  for (char c : v) {
    if (c < '0' || c > '9' || n > UINT32_MAX) return 0;
    n = n * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return n > UINT32_MAX ? 0 : static_cast<std::uint32_t>(n);
}
std::string_view Trace::procname() const { return metadata().Env("procname"); }
std::string_view Trace::hostname() const { return metadata().Env("hostname"); }

namespace {
std::int64_t Clamp(__int128 v) {
  if (v > INT64_MAX) return INT64_MAX;
  if (v < INT64_MIN) return INT64_MIN;
  return static_cast<std::int64_t>(v);
}
// Floor division (b > 0).
__int128 FloorDiv(__int128 a, __int128 b) {
  __int128 q = a / b;
  if (a % b != 0 && a < 0) --q;
  return q;
}
}  // namespace

std::int64_t Trace::ToEpochNs(std::uint64_t cycles) const {
  const ClockInfo& c = metadata().clock;
  const __int128 total = static_cast<__int128>(c.offset) + static_cast<__int128>(cycles);
  return Clamp(static_cast<__int128>(c.offset_s) * 1000000000 +
               FloorDiv(total * 1000000000, static_cast<__int128>(c.freq)));
}

std::int64_t Trace::CyclesToNs(std::int64_t cycles) const {
  const ClockInfo& c = metadata().clock;
  return Clamp(static_cast<__int128>(cycles) * 1000000000 / static_cast<__int128>(c.freq));
}

}  // namespace hush::reader
