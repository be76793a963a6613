// Parser of the HTP1 tracepoint metadata records (docs/format.md, section 5). Used by the
// runtime registry (records in memory) and by `hushtrace list` (records read from ELF files).
#ifndef HUSHTRACE_SRC_REGISTRY_META_RECORD_H_
#define HUSHTRACE_SRC_REGISTRY_META_RECORD_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hush::registry {

struct FieldInfo {
  std::string name;
  std::string type;  // type code: i8..i64, u8..u64, bool, f32, f64, str, bytes, phase
};

struct MetaRecord {
  std::uint8_t kind = 0;  // hush::internal::EventKind
  std::uint32_t line = 0;
  std::string provider;
  std::string name;
  std::string file;
  std::vector<FieldInfo> fields;

  std::string FullName() const { return provider + ":" + name; }
  // "i32 fd, str peer": identifies the layout; events with one name and two layouts are distinct.
  std::string Signature() const;
};

// a.FullName() == b.FullName(), without building either string in the usual case: the registry
// compares every new descriptor with every event it has, at each session's start (Registry::Add).
inline bool SameFullName(const MetaRecord& a, const MetaRecord& b) {
  if (a.provider == b.provider) return a.name == b.name;
  // Different providers give different full names unless one contains ':' ("a" "b:c" and "a:b"
  // "c" are both "a:b:c").
  if (a.provider.find(':') == std::string::npos && b.provider.find(':') == std::string::npos) return false;
  return a.FullName() == b.FullName();
}

const char* KindName(std::uint8_t kind);
bool IsKnownTypeCode(std::string_view code);

// Parses one record at `data` with at most `avail` readable bytes. On success returns the record
// size; on failure returns 0 and sets *error.
std::size_t ParseMetaRecord(const char* data, std::size_t avail, MetaRecord* out, std::string* error);

}  // namespace hush::registry

#endif  // HUSHTRACE_SRC_REGISTRY_META_RECORD_H_
