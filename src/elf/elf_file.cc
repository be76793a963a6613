#include "elf/elf_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <unordered_map>

#include "base/read_at.h"

// Older <elf.h> lack the DT_RELR constants (glibc < 2.36).
#ifndef DT_RELRSZ
#define DT_RELRSZ 35
#endif
#ifndef DT_RELR
#define DT_RELR 36
#endif
#ifndef DT_RELRENT
#define DT_RELRENT 37
#endif
#ifndef SHT_RELR
#define SHT_RELR 19
#endif

namespace hush::elf {
namespace {

std::string Hex(std::uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

bool Add(std::uint64_t a, std::uint64_t b, std::uint64_t* out) {
  return !__builtin_add_overflow(a, b, out);
}
bool Mul(std::uint64_t a, std::uint64_t b, std::uint64_t* out) {
  return !__builtin_mul_overflow(a, b, out);
}

// Rounds `v` up to a multiple of `align` (a power of two); false on overflow.
bool AlignUp(std::uint64_t v, std::uint64_t align, std::uint64_t* out) {
  if (align <= 1) {
    *out = v;
    return true;
  }
  std::uint64_t t;
  if (!Add(v, align - 1, &t)) return false;
  *out = t & ~(align - 1);
  return true;
}

bool IsPowerOfTwo(std::uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

// What a relocation type means for an 8-byte data pointer.
enum class RelocKind { kNone, kRelative, kAbsolute, kGlobDat, kUnsupported };

RelocKind ClassifyReloc(std::uint16_t machine, std::uint32_t type) {
  switch (machine) {
    case EM_X86_64:
      switch (type) {
        case R_X86_64_NONE:
          return RelocKind::kNone;
        case R_X86_64_RELATIVE:
          return RelocKind::kRelative;
        case R_X86_64_64:
          return RelocKind::kAbsolute;
        case R_X86_64_GLOB_DAT:
          return RelocKind::kGlobDat;
        default:
          return RelocKind::kUnsupported;
      }
    case EM_AARCH64:
      switch (type) {
        case R_AARCH64_NONE:
          return RelocKind::kNone;
        case R_AARCH64_RELATIVE:
          return RelocKind::kRelative;
        case R_AARCH64_ABS64:
        case R_AARCH64_GLOB_DAT:  // S + A, like ABS64
          return RelocKind::kAbsolute;
        default:
          return RelocKind::kUnsupported;
      }
    case EM_RISCV:
      switch (type) {
        case 0:
          return RelocKind::kNone;  // R_RISCV_NONE
        case 3:
          return RelocKind::kRelative;  // R_RISCV_RELATIVE
        case 2:
          return RelocKind::kAbsolute;  // R_RISCV_64
        default:
          return RelocKind::kUnsupported;
      }
    default:
      return RelocKind::kUnsupported;
  }
}

constexpr std::size_t kChunkBytes =
    std::size_t{64} * 1024;  // relocation tables are read in chunks this size

}  // namespace

const char* RelocationName(ElfFile::Relocation r) {
  switch (r) {
    case ElfFile::Relocation::kNone:
      return "none";
    case ElfFile::Relocation::kRelaRelative:
      return "rela-relative";
    case ElfFile::Relocation::kRelaSymbol:
      return "rela-symbol";
    case ElfFile::Relocation::kRelr:
      return "relr";
  }
  return "?";
}

ElfFile::~ElfFile() = default;

std::unique_ptr<ElfFile> ElfFile::Open(const std::string& path, std::string* error) {
  // O_NONBLOCK: opening a FIFO must not hang; it is refused below as not a regular file.
  base::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  if (!fd) {
    *error = path + ": " + std::strerror(errno);
    return nullptr;
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) {
    *error = path + ": " + std::strerror(errno);
    return nullptr;
  }
  if (!S_ISREG(st.st_mode)) {
    *error = path + (S_ISDIR(st.st_mode) ? ": is a directory" : ": not a regular file");
    return nullptr;
  }
  if (static_cast<std::uint64_t>(st.st_size) > kMaxFileSize) {
    *error = path + ": file too large (" + std::to_string(st.st_size) + " bytes; the limit is " +
             std::to_string(kMaxFileSize) + ")";
    return nullptr;
  }
  std::unique_ptr<ElfFile> f(new ElfFile());
  f->name_ = path;
  f->fd_ = std::move(fd);
  f->size_ = static_cast<std::uint64_t>(st.st_size);
  if (!f->Parse(error)) return nullptr;
  return f;
}

std::unique_ptr<ElfFile> ElfFile::FromMemory(std::string name, std::string image,
                                             std::string* error) {
  if (image.size() > kMaxFileSize) {
    *error = name + ": file too large";
    return nullptr;
  }
  std::unique_ptr<ElfFile> f(new ElfFile());
  f->name_ = std::move(name);
  f->image_ = std::move(image);
  f->size_ = f->image_.size();
  if (!f->Parse(error)) return nullptr;
  return f;
}

std::string ElfFile::ErrorAt(std::uint64_t offset, const std::string& what) const {
  return name_ + ": " + what + " (offset " + Hex(offset) + ")";
}

bool ElfFile::Read(std::uint64_t offset, std::size_t len, void* out, std::string* error) const {
  std::uint64_t end;
  if (!Add(offset, len, &end) || end > size_) {
    if (error) {
      *error =
          ErrorAt(offset, std::to_string(len) + " bytes needed past the end of the file (size " +
                              Hex(size_) + ")");
    }
    return false;
  }
  if (len == 0) return true;
  if (!fd_) {
    std::memcpy(out, image_.data() + offset, len);
    return true;
  }
  std::size_t done = 0;
  if (const int err = base::ReadAt(fd_.get(), out, len, offset, &done); err != 0) {
    if (error) {
      *error = ErrorAt(offset + done, err == base::kEndOfFile
                                          ? std::string("the file shrank while being read")
                                          : std::string("read failed: ") + std::strerror(err));
    }
    return false;
  }
  return true;
}

bool ElfFile::Parse(std::string* error) {
  unsigned char ident[EI_NIDENT] = {};
  const std::size_t have = static_cast<std::size_t>(std::min<std::uint64_t>(size_, EI_NIDENT));
  if (!Read(0, have, ident, error)) return false;
  if (have < SELFMAG || std::memcmp(ident, ELFMAG, SELFMAG) != 0) {
    *error = size_ == 0 ? Error("empty file, not an ELF file")
                        : ErrorAt(0, "not an ELF file (no ELF magic number)");
    return false;
  }
  if (have <= EI_CLASS || ident[EI_CLASS] != ELFCLASS64) {
    *error =
        ErrorAt(EI_CLASS, have <= EI_CLASS                ? "truncated ELF header"
                          : ident[EI_CLASS] == ELFCLASS32 ? "32-bit ELF files are not supported"
                                                          : "bad ELF class");
    return false;
  }
  if (have <= EI_DATA || ident[EI_DATA] != ELFDATA2LSB) {
    *error = ErrorAt(EI_DATA, have <= EI_DATA ? "truncated ELF header"
                                              : "only little-endian ELF files are supported");
    return false;
  }
  if (size_ < sizeof(Elf64_Ehdr)) {
    *error = ErrorAt(0, "truncated ELF header (" + std::to_string(size_) + " bytes, " +
                            std::to_string(sizeof(Elf64_Ehdr)) + " needed)");
    return false;
  }
  if (!Read(0, sizeof ehdr_, &ehdr_, error)) return false;
  if (ehdr_.e_type != ET_EXEC && ehdr_.e_type != ET_DYN && ehdr_.e_type != ET_REL) {
    *error =
        ErrorAt(offsetof(Elf64_Ehdr, e_type),
                ehdr_.e_type == ET_CORE ? "core files are not supported"
                                        : "unsupported ELF type " + std::to_string(ehdr_.e_type));
    return false;
  }
  if (!ParseSections(error) || !ParseSegments(error)) return false;

  if (ehdr_.e_type == ET_REL) {
    LayoutRelocatable();
  } else {
    for (const Elf64_Phdr& p : phdrs_) {
      if (p.p_type == PT_LOAD && p.p_filesz > 0)
        regions_.push_back({p.p_vaddr, p.p_filesz, p.p_offset});
    }
    if (regions_.empty()) {  // no loadable segment: use the allocated sections' addresses
      for (const Section& s : sections_) {
        if ((s.header.sh_flags & SHF_ALLOC) && s.header.sh_type != SHT_NOBITS &&
            s.header.sh_size > 0) {
          regions_.push_back({s.addr, s.header.sh_size, s.header.sh_offset});
        }
      }
    }
  }
  std::sort(regions_.begin(), regions_.end(),
            [](const Region& a, const Region& b) { return a.addr < b.addr; });
  return true;
}

bool ElfFile::ParseSections(std::string* error) {
  if (ehdr_.e_shoff == 0) return true;  // no section header table
  if (ehdr_.e_shentsize != sizeof(Elf64_Shdr)) {
    *error = ErrorAt(offsetof(Elf64_Ehdr, e_shentsize),
                     "unsupported section header size " + std::to_string(ehdr_.e_shentsize));
    return false;
  }
  Elf64_Shdr first;
  std::string read_error;
  if (!Read(ehdr_.e_shoff, sizeof first, &first, &read_error)) {
    *error = ErrorAt(ehdr_.e_shoff, "section header table extends past the end of the file (size " +
                                        Hex(size_) + ")");
    return false;
  }
  // Extended numbering: counts that do not fit the ELF header are kept in section 0.
  const std::uint64_t count = ehdr_.e_shnum != 0 ? ehdr_.e_shnum : first.sh_size;
  const std::uint64_t strndx = ehdr_.e_shstrndx == SHN_XINDEX ? first.sh_link : ehdr_.e_shstrndx;
  if (count == 0) return true;
  if (count > kMaxSections) {
    *error = ErrorAt(ehdr_.e_shoff, "too many sections (" + std::to_string(count) + ")");
    return false;
  }
  std::uint64_t table_size, table_end;
  if (!Mul(count, sizeof(Elf64_Shdr), &table_size) || !Add(ehdr_.e_shoff, table_size, &table_end) ||
      table_end > size_) {
    *error = ErrorAt(ehdr_.e_shoff, "section header table (" + std::to_string(count) + " x " +
                                        std::to_string(sizeof(Elf64_Shdr)) +
                                        " bytes) extends past the end of the file (size " +
                                        Hex(size_) + ")");
    return false;
  }
  std::vector<Elf64_Shdr> headers(count);
  if (!Read(ehdr_.e_shoff, table_size, headers.data(), error)) return false;

  sections_.resize(count);
  for (std::uint64_t i = 0; i < count; ++i) {
    const Elf64_Shdr& h = headers[i];
    sections_[i].header = h;
    sections_[i].addr = h.sh_addr;
    if (i == 0 || h.sh_type == SHT_NOBITS || h.sh_type == SHT_NULL) continue;
    std::uint64_t end;
    if (!Add(h.sh_offset, h.sh_size, &end) || end > size_) {
      *error = ErrorAt(ehdr_.e_shoff + i * sizeof(Elf64_Shdr),
                       "section " + std::to_string(i) + " (" + std::to_string(h.sh_size) +
                           " bytes at offset " + Hex(h.sh_offset) +
                           ") extends past the end of the file (size " + Hex(size_) + ")");
      return false;
    }
  }
  // Section names.
  if (strndx == SHN_UNDEF) return true;
  if (strndx >= count || headers[strndx].sh_type == SHT_NOBITS) {
    *error = ErrorAt(offsetof(Elf64_Ehdr, e_shstrndx),
                     "bad section name table index " + std::to_string(strndx));
    return false;
  }
  const Elf64_Shdr& strtab = headers[strndx];
  if (strtab.sh_size > kMaxTableBytes) {
    *error = ErrorAt(strtab.sh_offset, "section name table too large");
    return false;
  }
  std::string names(strtab.sh_size, '\0');
  if (!Read(strtab.sh_offset, names.size(), names.data(), error)) return false;
  for (std::uint64_t i = 1; i < count; ++i) {
    const std::uint32_t at = headers[i].sh_name;
    if (at >= names.size()) {
      *error = ErrorAt(ehdr_.e_shoff + i * sizeof(Elf64_Shdr),
                       "section " + std::to_string(i) + " name offset out of range");
      return false;
    }
    const std::size_t end = names.find('\0', at);
    sections_[i].name = names.substr(at, end == std::string::npos ? std::string::npos : end - at);
  }
  return true;
}

bool ElfFile::ParseSegments(std::string* error) {
  std::uint64_t count = ehdr_.e_phnum;
  if (count == PN_XNUM && !sections_.empty()) count = sections_[0].header.sh_info;
  if (ehdr_.e_phoff == 0 || count == 0) return true;
  if (ehdr_.e_phentsize != sizeof(Elf64_Phdr)) {
    *error = ErrorAt(offsetof(Elf64_Ehdr, e_phentsize),
                     "unsupported program header size " + std::to_string(ehdr_.e_phentsize));
    return false;
  }
  std::uint64_t table_size, table_end;
  if (!Mul(count, sizeof(Elf64_Phdr), &table_size) || !Add(ehdr_.e_phoff, table_size, &table_end) ||
      table_end > size_) {
    *error = ErrorAt(ehdr_.e_phoff, "program header table (" + std::to_string(count) + " x " +
                                        std::to_string(sizeof(Elf64_Phdr)) +
                                        " bytes) extends past the end of the file (size " +
                                        Hex(size_) + ")");
    return false;
  }
  phdrs_.resize(count);
  if (!Read(ehdr_.e_phoff, table_size, phdrs_.data(), error)) return false;
  for (std::uint64_t i = 0; i < count; ++i) {
    const Elf64_Phdr& p = phdrs_[i];
    if (p.p_type != PT_LOAD && p.p_type != PT_NOTE && p.p_type != PT_DYNAMIC) continue;
    std::uint64_t end;
    if (!Add(p.p_offset, p.p_filesz, &end) || end > size_) {
      *error = ErrorAt(ehdr_.e_phoff + i * sizeof(Elf64_Phdr),
                       "segment " + std::to_string(i) + " (" + std::to_string(p.p_filesz) +
                           " bytes at offset " + Hex(p.p_offset) +
                           ") extends past the end of the file (size " + Hex(size_) + ")");
      return false;
    }
  }
  return true;
}

void ElfFile::LayoutRelocatable() {
  // Sections of a relocatable object have no address: give each allocated one a synthetic address,
  // in section order, starting above 0 so that a null pointer never maps to data.
  std::uint64_t cursor = 0x10000;
  for (Section& s : sections_) {
    s.addr = 0;
    if (!(s.header.sh_flags & SHF_ALLOC) || s.header.sh_size == 0) continue;
    std::uint64_t align = s.header.sh_addralign;
    if (!IsPowerOfTwo(align) || align > 4096) align = 16;
    std::uint64_t addr, end;
    if (s.header.sh_size > kMaxFileSize || !AlignUp(cursor, align, &addr) ||
        !Add(addr, s.header.sh_size, &end)) {
      continue;
    }
    s.addr = addr;
    cursor = end;
    if (s.header.sh_type != SHT_NOBITS)
      regions_.push_back({addr, s.header.sh_size, s.header.sh_offset});
  }
}

const ElfFile::Section* ElfFile::FindSection(std::string_view name) const {
  for (const Section& s : sections_) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

bool ElfFile::ReadDependencies(Dependencies* out, std::string* error) const {
  *out = Dependencies();
  const Elf64_Phdr* dynamic = nullptr;
  for (const Elf64_Phdr& p : phdrs_) {
    if (p.p_type == PT_DYNAMIC) dynamic = &p;
  }
  if (dynamic == nullptr || ehdr_.e_type == ET_REL) return true;
  std::vector<std::uint64_t> needed;
  std::uint64_t strtab = 0, strsz = 0, runpath = 0, rpath = 0;
  bool has_strtab = false, has_runpath = false, has_rpath = false;
  const std::uint64_t entries =
      std::min<std::uint64_t>(dynamic->p_filesz / sizeof(Elf64_Dyn), 1u << 16);
  for (std::uint64_t i = 0; i < entries; ++i) {
    Elf64_Dyn d;
    if (!Read(dynamic->p_offset + i * sizeof d, sizeof d, &d, error)) return false;
    if (d.d_tag == DT_NULL) break;
    switch (d.d_tag) {
      case DT_NEEDED:
        if (needed.size() == kMaxNeeded) {
          *error = ErrorAt(dynamic->p_offset, "more than " + std::to_string(kMaxNeeded) + " DT_NEEDED entries");
          return false;
        }
        needed.push_back(d.d_un.d_val);
        break;
      case DT_STRTAB: strtab = d.d_un.d_ptr, has_strtab = true; break;
      case DT_STRSZ: strsz = d.d_un.d_val; break;
      case DT_RUNPATH: runpath = d.d_un.d_val, has_runpath = true; break;
      case DT_RPATH: rpath = d.d_un.d_val, has_rpath = true; break;
      default: break;
    }
  }
  if (needed.empty() && !has_runpath && !has_rpath) return true;
  std::uint64_t str_offset = 0, avail = 0;
  if (!has_strtab || !AddressToOffset(strtab, &str_offset, &avail)) {
    *error = ErrorAt(dynamic->p_offset, "DT_NEEDED without a readable DT_STRTAB");
    return false;
  }
  const std::uint64_t limit = std::min(avail, strsz);
  // The NUL-terminated string at `at` of the table.
  const auto string_at = [&](std::uint64_t at, std::string* s) {
    if (at >= limit) {
      *error = ErrorAt(str_offset, "dynamic string offset " + std::to_string(at) +
                                       " past the table's " + std::to_string(limit) + " bytes");
      return false;
    }
    char buf[4096];
    const std::size_t len = static_cast<std::size_t>(std::min<std::uint64_t>(sizeof buf, limit - at));
    if (!Read(str_offset + at, len, buf, error)) return false;
    const void* nul = std::memchr(buf, '\0', len);
    if (nul == nullptr) {
      *error = ErrorAt(str_offset + at, "dynamic string without a NUL in 4096 bytes");
      return false;
    }
    s->assign(buf, static_cast<std::size_t>(static_cast<const char*>(nul) - buf));
    return true;
  };
  for (const std::uint64_t at : needed) {
    std::string name;
    if (!string_at(at, &name)) return false;
    out->needed.push_back(std::move(name));
  }
  if (has_runpath || has_rpath) {
    std::string path;
    if (!string_at(has_runpath ? runpath : rpath, &path)) return false;
    out->rpath = !has_runpath;
    std::size_t start = 0;
    while (start <= path.size()) {
      std::size_t end = path.find(':', start);
      if (end == std::string::npos) end = path.size();
      if (end > start) out->search.push_back(path.substr(start, end - start));
      start = end + 1;
    }
  }
  return true;
}

bool ElfFile::AddressToOffset(std::uint64_t addr, std::uint64_t* offset,
                              std::uint64_t* avail) const {
  // The last region starting at or below addr (regions are sorted by address).
  auto it = std::upper_bound(regions_.begin(), regions_.end(), addr,
                             [](std::uint64_t a, const Region& r) { return a < r.addr; });
  // Regions may overlap in a malformed file: look at a few lower ones too, not at all of them.
  for (int steps = 0; it != regions_.begin() && steps < 64; ++steps) {
    --it;
    if (addr - it->addr < it->size) {
      *offset = it->offset + (addr - it->addr);
      *avail = it->size - (addr - it->addr);
      return true;
    }
  }
  return false;
}

bool ElfFile::ReadAddress(std::uint64_t addr, std::size_t len, void* out,
                          std::string* error) const {
  std::uint64_t offset, avail;
  if (!AddressToOffset(addr, &offset, &avail)) {
    *error = "address " + Hex(addr) + " is not in the file's loaded data";
    return false;
  }
  if (avail < len) {
    *error = "address " + Hex(addr) + ": " + std::to_string(len) + " bytes needed, " +
             std::to_string(avail) + " in its segment";
    return false;
  }
  return Read(offset, len, out, error);
}

std::vector<ElfFile::RelocTable> ElfFile::RelocationTables(
    std::vector<std::string>* warnings) const {
  std::vector<RelocTable> tables;
  auto symbols_of = [&](std::uint32_t symtab_index) {
    SymbolTable t;
    if (symtab_index == 0 || symtab_index >= sections_.size()) return t;
    const Elf64_Shdr& h = sections_[symtab_index].header;
    if (h.sh_type != SHT_SYMTAB && h.sh_type != SHT_DYNSYM) return t;
    t.offset = h.sh_offset;
    t.count = h.sh_size / sizeof(Elf64_Sym);
    if (h.sh_link != 0 && h.sh_link < sections_.size() &&
        sections_[h.sh_link].header.sh_type == SHT_STRTAB) {
      t.str_offset = sections_[h.sh_link].header.sh_offset;
      t.str_size = sections_[h.sh_link].header.sh_size;
    }
    return t;
  };

  const Elf64_Phdr* dynamic = nullptr;
  for (const Elf64_Phdr& p : phdrs_) {
    if (p.p_type == PT_DYNAMIC) dynamic = &p;
  }

  if (ehdr_.e_type == ET_REL || dynamic == nullptr) {
    for (std::size_t i = 0; i < sections_.size(); ++i) {
      const Elf64_Shdr& h = sections_[i].header;
      if (h.sh_type != SHT_RELA && h.sh_type != SHT_RELR) continue;
      RelocTable t;
      t.offset = h.sh_offset;
      t.size = h.sh_size;
      t.relr = h.sh_type == SHT_RELR;
      t.entsize = t.relr ? 8 : (h.sh_entsize != 0 ? h.sh_entsize : sizeof(Elf64_Rela));
      if (ehdr_.e_type == ET_REL) {
        if (t.relr || h.sh_info == 0 || h.sh_info >= sections_.size() ||
            sections_[h.sh_info].addr == 0) {
          continue;  // relocations of a section that is not loaded (debug info...)
        }
        t.base = sections_[h.sh_info].addr;
      } else if (!(h.sh_flags & SHF_ALLOC)) {
        continue;
      }
      if (!t.relr) t.symbols = symbols_of(h.sh_link);
      tables.push_back(t);
    }
    return tables;
  }

  // The dynamic section: what the dynamic loader applies.
  std::uint64_t rela = 0, relasz = 0, relaent = sizeof(Elf64_Rela), relr = 0, relrsz = 0,
                relrent = 8;
  std::uint64_t symtab = 0, strtab = 0, strsz = 0;
  bool has_rela = false, has_relr = false, has_symtab = false, has_strtab = false;
  const std::uint64_t entries =
      std::min<std::uint64_t>(dynamic->p_filesz / sizeof(Elf64_Dyn), 1u << 16);
  for (std::uint64_t i = 0; i < entries; ++i) {
    Elf64_Dyn d;
    if (!Read(dynamic->p_offset + i * sizeof d, sizeof d, &d)) break;
    if (d.d_tag == DT_NULL) break;
    switch (d.d_tag) {
      case DT_RELA:
        rela = d.d_un.d_ptr;
        has_rela = true;
        break;
      case DT_RELASZ:
        relasz = d.d_un.d_val;
        break;
      case DT_RELAENT:
        relaent = d.d_un.d_val;
        break;
      case DT_RELR:
        relr = d.d_un.d_ptr;
        has_relr = true;
        break;
      case DT_RELRSZ:
        relrsz = d.d_un.d_val;
        break;
      case DT_RELRENT:
        relrent = d.d_un.d_val;
        break;
      case DT_SYMTAB:
        symtab = d.d_un.d_ptr;
        has_symtab = true;
        break;
      case DT_STRTAB:
        strtab = d.d_un.d_ptr;
        has_strtab = true;
        break;
      case DT_STRSZ:
        strsz = d.d_un.d_val;
        break;
      default:
        break;
    }
  }
  SymbolTable symbols;
  std::uint64_t offset, avail;
  if (has_symtab && AddressToOffset(symtab, &offset, &avail)) {
    symbols.offset = offset;
    symbols.count = avail / sizeof(Elf64_Sym);
  }
  if (has_strtab && AddressToOffset(strtab, &offset, &avail)) {
    symbols.str_offset = offset;
    symbols.str_size = std::min(avail, strsz);
  }
  auto add = [&](bool present, std::uint64_t addr, std::uint64_t size, std::uint64_t entsize,
                 bool is_relr) {
    if (!present || size == 0) return;
    const char* what = is_relr ? "DT_RELR" : "DT_RELA";
    if (entsize != (is_relr ? 8 : sizeof(Elf64_Rela))) {
      warnings->push_back(
          Error(std::string("unsupported ") + what + " entry size " + std::to_string(entsize)));
      return;
    }
    RelocTable t;
    if (!AddressToOffset(addr, &t.offset, &avail) || avail < size) {
      warnings->push_back(Error(std::string(what) + " table at address " + Hex(addr) + " (" +
                                std::to_string(size) + " bytes) is not in the file"));
      return;
    }
    t.size = size;
    t.entsize = entsize;
    t.relr = is_relr;
    t.symbols = symbols;
    tables.push_back(t);
  };
  add(has_rela, rela, relasz, relaent, false);
  add(has_relr, relr, relrsz, relrent, true);
  return tables;
}

bool ElfFile::FunctionSymbols(std::vector<Symbol>* out, std::string* error) const {
  out->clear();
  const Section* table = nullptr;
  for (const Section& s : sections_) {
    if (s.header.sh_type == SHT_SYMTAB) table = &s;
  }
  if (table == nullptr) {
    for (const Section& s : sections_) {
      if (s.header.sh_type == SHT_DYNSYM) table = &s;
    }
  }
  if (table == nullptr) return true;
  const Elf64_Shdr& h = table->header;
  if (h.sh_link == 0 || h.sh_link >= sections_.size() ||
      sections_[h.sh_link].header.sh_type != SHT_STRTAB) {
    *error = Error("symbol table " + table->name + " has no string table");
    return false;
  }
  const Elf64_Shdr& strh = sections_[h.sh_link].header;
  if (h.sh_size > kMaxTableBytes || strh.sh_size > kMaxTableBytes) {
    *error = Error("symbol table " + table->name + " is larger than the reader's limit");
    return false;
  }
  const std::size_t count = h.sh_size / sizeof(Elf64_Sym);
  std::vector<Elf64_Sym> syms(count);
  std::string strings(strh.sh_size, '\0');
  if (!Read(h.sh_offset, count * sizeof(Elf64_Sym), syms.data(), error) ||
      !Read(strh.sh_offset, strings.size(), strings.data(), error)) {
    return false;
  }
  for (const Elf64_Sym& sym : syms) {
    const unsigned type = ELF64_ST_TYPE(sym.st_info);
    if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym.st_shndx == SHN_UNDEF ||
        sym.st_name >= strings.size()) {
      continue;
    }
    const char* name = strings.data() + sym.st_name;
    out->push_back({std::string(name, strnlen(name, strings.size() - sym.st_name)), sym.st_value,
                    sym.st_size});
  }
  std::sort(out->begin(), out->end(),
            [](const Symbol& a, const Symbol& b) { return a.value < b.value; });
  return true;
}

bool ElfFile::FindFunction(std::string_view name, std::uint64_t* value) const {
  for (const std::uint32_t type : {SHT_DYNSYM, SHT_SYMTAB}) {
    for (const Section& s : sections_) {
      const Elf64_Shdr& h = s.header;
      if (h.sh_type != type || h.sh_link == 0 || h.sh_link >= sections_.size() ||
          sections_[h.sh_link].header.sh_type != SHT_STRTAB) {
        continue;
      }
      const Elf64_Shdr& strh = sections_[h.sh_link].header;
      if (h.sh_size > kMaxTableBytes || strh.sh_size > kMaxTableBytes) continue;
      std::vector<Elf64_Sym> syms(h.sh_size / sizeof(Elf64_Sym));
      std::string strings(strh.sh_size, '\0');
      if (!Read(h.sh_offset, syms.size() * sizeof(Elf64_Sym), syms.data()) ||
          !Read(strh.sh_offset, strings.size(), strings.data())) {
        continue;
      }
      for (const Elf64_Sym& sym : syms) {
        if (ELF64_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_value == 0 ||
            sym.st_name >= strings.size() || strings.size() - sym.st_name <= name.size()) {
          continue;
        }
        const char* at = strings.data() + sym.st_name;
        if (at[name.size()] == '\0' && std::string_view(at, name.size()) == name) {
          *value = sym.st_value;
          return true;
        }
      }
    }
  }
  return false;
}

std::string ElfFile::SymbolName(const SymbolTable& table, const Elf64_Sym& sym) const {
  if (sym.st_name >= table.str_size) return "?";
  char buf[128] = {};
  const std::uint64_t len = std::min<std::uint64_t>(sizeof buf - 1, table.str_size - sym.st_name);
  if (!Read(table.str_offset + sym.st_name, len, buf)) return "?";
  std::string s(buf, strnlen(buf, len));
  for (char& c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return s;
}

bool ElfFile::ResolveSymbol(const SymbolTable& table, std::uint64_t index, std::uint64_t* value,
                            std::string* error) const {
  if (index == 0) {
    *value = 0;
    return true;
  }
  if (index >= table.count) {
    *error = "relocation symbol index " + std::to_string(index) + " is out of range";
    return false;
  }
  Elf64_Sym sym;
  if (!Read(table.offset + index * sizeof sym, sizeof sym, &sym, error)) return false;
  if (sym.st_shndx == SHN_UNDEF) {
    *error = "relocation against undefined symbol '" + SymbolName(table, sym) + "'";
    return false;
  }
  if (ehdr_.e_type != ET_REL || sym.st_shndx == SHN_ABS) {
    *value = sym.st_value;
    return true;
  }
  if (sym.st_shndx >= SHN_LORESERVE || sym.st_shndx >= sections_.size() ||
      sections_[sym.st_shndx].addr == 0) {
    *error = "relocation against symbol '" + SymbolName(table, sym) + "' in an unsupported section";
    return false;
  }
  *value = sections_[sym.st_shndx].addr + sym.st_value;
  return true;
}

std::vector<ElfFile::Pointer> ElfFile::ResolvePointers(const std::vector<std::uint64_t>& addrs,
                                                       std::vector<std::string>* warnings) const {
  std::vector<Pointer> out(addrs.size());
  std::unordered_map<std::uint64_t, Pointer> found;  // relocations at the wanted addresses
  found.reserve(addrs.size());
  for (std::uint64_t a : addrs) found.emplace(a, Pointer{});  // relocation kNone: not found yet
  std::vector<std::string> table_warnings;
  const std::vector<RelocTable> tables = RelocationTables(&table_warnings);
  if (warnings) warnings->insert(warnings->end(), table_warnings.begin(), table_warnings.end());

  auto mark_relr = [&](std::uint64_t where) {
    auto it = found.find(where);
    if (it != found.end() && it->second.relocation == Relocation::kNone) {
      it->second.relocation = Relocation::kRelr;
    }
  };
  std::vector<char> chunk;
  for (const RelocTable& t : tables) {
    if (t.entsize == 0 || t.entsize > 4096) continue;
    // RELR state: the next address an address entry or bitmap applies to.
    std::uint64_t relr_where = 0;
    const std::uint64_t per_chunk = std::max<std::uint64_t>(1, kChunkBytes / t.entsize);
    const std::uint64_t count = t.size / t.entsize;
    for (std::uint64_t first = 0; first < count; first += per_chunk) {
      const std::uint64_t n = std::min(per_chunk, count - first);
      chunk.resize(n * t.entsize);
      if (!Read(t.offset + first * t.entsize, chunk.size(), chunk.data())) break;
      for (std::uint64_t i = 0; i < n; ++i) {
        const char* e = chunk.data() + i * t.entsize;
        if (t.relr) {
          std::uint64_t word;
          std::memcpy(&word, e, 8);
          if ((word & 1) == 0) {  // an address; then the next word
            mark_relr(word);
            relr_where = word + 8;
          } else {  // a bitmap of the next 63 words
            std::uint64_t bits = word >> 1;
            for (int b = 0; bits != 0; ++b, bits >>= 1) {
              if (bits & 1) mark_relr(relr_where + 8 * static_cast<std::uint64_t>(b));
            }
            relr_where += std::uint64_t{63} * 8;
          }
          continue;
        }
        Elf64_Rela r;
        std::memcpy(&r, e, sizeof r);
        const std::uint64_t where = t.base + r.r_offset;
        auto it = found.find(where);
        if (it == found.end()) continue;
        Pointer& p = it->second;
        const std::uint32_t type = ELF64_R_TYPE(r.r_info);
        switch (ClassifyReloc(ehdr_.e_machine, type)) {
          case RelocKind::kNone:
            break;
          case RelocKind::kRelative:
            p = Pointer{true, static_cast<std::uint64_t>(r.r_addend), Relocation::kRelaRelative,
                        ""};
            break;
          case RelocKind::kAbsolute:
          case RelocKind::kGlobDat: {
            std::uint64_t s = 0;
            std::string error;
            if (ResolveSymbol(t.symbols, ELF64_R_SYM(r.r_info), &s, &error)) {
              const std::uint64_t addend =
                  ClassifyReloc(ehdr_.e_machine, type) == RelocKind::kGlobDat
                      ? 0
                      : static_cast<std::uint64_t>(r.r_addend);
              p = Pointer{true, s + addend, Relocation::kRelaSymbol, ""};
            } else {
              p = Pointer{false, 0, Relocation::kRelaSymbol, error};
            }
            break;
          }
          case RelocKind::kUnsupported:
            p = Pointer{false, 0, Relocation::kRelaSymbol,
                        "unsupported relocation type " + std::to_string(type) + " for machine " +
                            std::to_string(ehdr_.e_machine)};
            break;
        }
      }
    }
  }

  for (std::size_t i = 0; i < addrs.size(); ++i) {
    const Pointer& f = found[addrs[i]];
    if (f.relocation == Relocation::kRelaRelative || f.relocation == Relocation::kRelaSymbol) {
      out[i] = f;
      continue;
    }
    // No RELA relocation: the value stored in the file (the addend for RELR).
    Pointer& p = out[i];
    p.relocation = f.relocation;
    std::uint64_t v;
    if (ReadAddress(addrs[i], sizeof v, &v, &p.error)) {
      p.ok = true;
      p.value = v;
    }
  }
  return out;
}

void ElfFile::ForEachNote(const std::function<void(const Note&)>& fn,
                          std::vector<std::string>* warnings) const {
  struct Area {
    std::uint64_t offset, size, addr, align;
  };
  std::vector<Area> areas;
  for (const Elf64_Phdr& p : phdrs_) {
    if (p.p_type == PT_NOTE) areas.push_back({p.p_offset, p.p_filesz, p.p_vaddr, p.p_align});
  }
  if (areas.empty()) {
    for (const Section& s : sections_) {
      if (s.header.sh_type == SHT_NOTE) {
        areas.push_back({s.header.sh_offset, s.header.sh_size, s.addr, s.header.sh_addralign});
      }
    }
  }
  for (const Area& area : areas) {
    const std::uint64_t align = area.align == 8 ? 8 : 4;
    std::uint64_t pos = 0;
    while (pos <= area.size && area.size - pos >= sizeof(Elf64_Nhdr)) {
      Elf64_Nhdr nh;
      if (!Read(area.offset + pos, sizeof nh, &nh)) break;
      // The descriptor and the next note start at aligned offsets (with 8-byte alignment, the
      // 12-byte header plus "GNU\0" needs no padding).
      std::uint64_t name_end, desc_at, desc_end, next;
      if (!Add(pos + sizeof nh, nh.n_namesz, &name_end) || !AlignUp(name_end, align, &desc_at) ||
          !Add(desc_at, nh.n_descsz, &desc_end) || desc_end > area.size) {
        if (warnings) warnings->push_back(ErrorAt(area.offset + pos, "malformed note"));
        break;
      }
      Note note;
      note.type = nh.n_type;
      if (nh.n_namesz > 0 && nh.n_namesz <= 256) {
        char name[256];
        if (Read(area.offset + pos + sizeof nh, nh.n_namesz, name)) {
          note.name.assign(name, strnlen(name, nh.n_namesz));
        }
      }
      note.desc_offset = area.offset + desc_at;
      note.desc_size = nh.n_descsz;
      note.desc_addr = area.addr != 0 ? area.addr + desc_at : 0;
      fn(note);
      if (!AlignUp(desc_end, align, &next) || next <= pos) break;
      pos = next;
    }
  }
}

std::string ElfFile::BuildId() const {
  std::string id;
  ForEachNote(
      [&](const Note& n) {
        if (!id.empty() || n.type != NT_GNU_BUILD_ID || n.name != "GNU" || n.desc_size == 0 ||
            n.desc_size > 64) {
          return;
        }
        unsigned char bytes[64];
        if (!Read(n.desc_offset, n.desc_size, bytes)) return;
        static constexpr char kDigits[] = "0123456789abcdef";
        for (std::uint64_t i = 0; i < n.desc_size; ++i) {
          id += kDigits[bytes[i] >> 4];
          id += kDigits[bytes[i] & 15];
        }
      },
      nullptr);
  return id;
}

}  // namespace hush::elf
