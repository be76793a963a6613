// Tests of the ELF reader behind `hushtrace list` (src/elf): relocation kinds, fallbacks, and
// malformed input (mutated and truncated images must give errors, never crashes: run under ASan).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "cli/cli_test_util.h"
#include "elf/elf_file.h"
#include "elf/tracepoints.h"

namespace hush::elf {
namespace {

using clitest::ReadFile;

std::vector<std::string> Names(const ModuleTracepoints& m) {
  std::vector<std::string> out;
  for (const Tracepoint& tp : m.tracepoints) {
    out.push_back(tp.meta.FullName() + " " + registry::KindName(tp.meta.kind) + " (" +
                  tp.meta.Signature() + ")");
  }
  return out;
}

const std::vector<std::string>& ProgramNames() {
  static const std::vector<std::string> kNames = {
      "cliprog:blob event (bytes data)",
      "cliprog:empty event ()",
      "cliprog:inline_helper instant ()",
      "cliprog:iterations counter (f64 value)",
      "cliprog:main_loop span (phase phase)",
      "cliprog:mixed instant ()",
      "cliprog:mixed counter (f64 value)",
      "cliprog:start event (i32 argc, str arg0)",
      "cliprog:text event (str view, str owned)",
      "cliprog:tick instant ()",
      "cliprog:values event (i8 a, i16 b, i32 c, i64 d, u8 e, u16 f, u32 g, u64 h, bool flag, f32 "
      "ratio, "
      "f64 mean, u16 color)",
  };
  return kNames;
}

std::unique_ptr<ElfFile> OpenOrDie(const std::string& path) {
  std::string error;
  std::unique_ptr<ElfFile> f = ElfFile::Open(path, &error);
  EXPECT_TRUE(f) << error;
  return f;
}

// The kinds of relocation that gave the hush_desc entries their values.
std::set<ElfFile::Relocation> DescRelocations(const ElfFile& f) {
  const ElfFile::Section* s = f.FindSection("hush_desc");
  EXPECT_NE(s, nullptr);
  std::set<ElfFile::Relocation> kinds;
  if (s == nullptr) return kinds;
  std::vector<std::uint64_t> slots;
  for (std::uint64_t a = s->addr; a < s->addr + s->header.sh_size; a += 8) slots.push_back(a);
  for (const ElfFile::Pointer& p : f.ResolvePointers(slots)) {
    EXPECT_TRUE(p.ok) << p.error;
    kinds.insert(p.relocation);
  }
  return kinds;
}

ModuleTracepoints ReadImage(const std::string& image, std::string* error, bool* ok) {
  ModuleTracepoints m;
  std::unique_ptr<ElfFile> f = ElfFile::FromMemory("image", image, error);
  *ok = f && ReadTracepoints(*f, &m, error);
  return m;
}

TEST(ElfReader, PieUsesRelativeRelocations) {
  auto f = OpenOrDie(CLI_TP_PIE);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->type(), ET_DYN);
  EXPECT_EQ(DescRelocations(*f), std::set<ElfFile::Relocation>{ElfFile::Relocation::kRelaRelative});
  ModuleTracepoints m;
  std::string error;
  ASSERT_TRUE(ReadTracepoints(*f, &m, &error)) << error;
  EXPECT_TRUE(m.warnings.empty()) << m.warnings.front();
  EXPECT_EQ(Names(m), ProgramNames());
  EXPECT_TRUE(clitest::IsLowerHex(m.build_id, 16)) << m.build_id;
  for (const Tracepoint& tp : m.tracepoints) {
    if (tp.meta.FullName() == "cliprog:start") {
      EXPECT_EQ(tp.sites, 2u);
      EXPECT_EQ(tp.locations.size(), 1u);
    }
    if (tp.meta.FullName() == "cliprog:tick") {
      EXPECT_EQ(tp.sites, 2u);
      EXPECT_EQ(tp.locations.size(), 2u);
    }
  }
}

TEST(ElfReader, BuildIdMatchesReadelf) {
  if (clitest::FindInPath("readelf").empty()) GTEST_SKIP() << "readelf is not installed";
  const clitest::RunResult r = clitest::RunCommand({"readelf", "-n", CLI_TP_PIE});
  const std::string line = clitest::LineContaining(r.out, "Build ID: ");
  ASSERT_NE(line, "") << r.out;
  auto f = OpenOrDie(CLI_TP_PIE);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->BuildId(), line.substr(line.find("Build ID: ") + 10));
}

// The dynamic section as readelf -d prints it: NEEDED names in order, the RUNPATH split at ':'.
TEST(ElfReader, DependenciesMatchReadelf) {
  if (clitest::FindInPath("readelf").empty()) GTEST_SKIP() << "readelf is not installed";
  const clitest::RunResult r = clitest::RunCommand({"readelf", "-d", CLI_TP_PIE});
  std::vector<std::string> needed;
  std::string runpath;
  for (std::size_t at = 0; (at = r.out.find("Shared library: [", at)) != std::string::npos;) {
    at += 17;
    needed.push_back(r.out.substr(at, r.out.find(']', at) - at));
  }
  const std::string line = clitest::LineContaining(r.out, "Library runpath: [");
  if (!line.empty()) runpath = line.substr(line.find('[') + 1, line.rfind(']') - line.find('[') - 1);
  ASSERT_GE(needed.size(), 2u) << r.out;
  auto f = OpenOrDie(CLI_TP_PIE);
  ASSERT_TRUE(f);
  ElfFile::Dependencies deps;
  std::string error;
  ASSERT_TRUE(f->ReadDependencies(&deps, &error)) << error;
  EXPECT_EQ(deps.needed, needed);
  std::string joined;
  for (const std::string& d : deps.search) joined += (joined.empty() ? "" : ":") + d;
  EXPECT_EQ(joined, runpath);
  EXPECT_FALSE(deps.rpath);
  // A static executable, an object: nothing to load.
  auto obj = OpenOrDie(CLI_TP_OBJECT);
  ASSERT_TRUE(obj);
  ASSERT_TRUE(obj->ReadDependencies(&deps, &error)) << error;
  EXPECT_TRUE(deps.needed.empty());
}

TEST(ElfReader, NonPieHasNoRelocations) {
  auto f = OpenOrDie(CLI_TP_NOPIE);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->type(), ET_EXEC);
  EXPECT_EQ(DescRelocations(*f), std::set<ElfFile::Relocation>{ElfFile::Relocation::kNone});
}

TEST(ElfReader, SharedLibrary) {
  auto f = OpenOrDie(CLI_TP_LIB);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->type(), ET_DYN);
  ModuleTracepoints m;
  std::string error;
  ASSERT_TRUE(ReadTracepoints(*f, &m, &error)) << error;
  EXPECT_EQ(Names(m), (std::vector<std::string>{"clilib:call event (u64 n, str tag)",
                                                "clilib:depth counter (f64 value)",
                                                "clilib:work span (phase phase)"}));
}

// What `hushtrace start PID` looks up to call into a live process: an exported function of a
// shared library (.dynsym) and a function of an executable (.symtab), found at the address the
// whole symbol table gives; no prefix or suffix of a name matches it.
TEST(ElfReader, FindFunctionAgreesWithTheSymbolTables) {
  for (const char* path : {CLI_TP_LIB, CLI_TP_PIE}) {
    auto f = OpenOrDie(path);
    ASSERT_TRUE(f);
    std::vector<ElfFile::Symbol> symbols;
    std::string error;
    ASSERT_TRUE(f->FunctionSymbols(&symbols, &error)) << error;
    const std::string name = path == std::string(CLI_TP_LIB) ? "_Z10CliLibWorki" : "main";
    const auto it = std::find_if(symbols.begin(), symbols.end(),
                                 [&](const ElfFile::Symbol& s) { return s.name == name; });
    ASSERT_NE(it, symbols.end()) << path;
    std::uint64_t value = 0;
    EXPECT_TRUE(f->FindFunction(name, &value)) << path;
    EXPECT_EQ(value, it->value) << path;
    EXPECT_FALSE(f->FindFunction(name.substr(0, name.size() - 1), &value)) << path;
    EXPECT_FALSE(f->FindFunction(name + "x", &value)) << path;
    EXPECT_FALSE(f->FindFunction("no_such_function_here", &value)) << path;
  }
}

TEST(ElfReader, RelocatableObjectUsesSymbolRelocations) {
  auto f = OpenOrDie(CLI_TP_OBJECT);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->type(), ET_REL);
  EXPECT_EQ(DescRelocations(*f), std::set<ElfFile::Relocation>{ElfFile::Relocation::kRelaSymbol});
  ModuleTracepoints m;
  std::string error;
  ASSERT_TRUE(ReadTracepoints(*f, &m, &error)) << error;
  EXPECT_TRUE(m.warnings.empty()) << m.warnings.front();
  EXPECT_EQ(m.tracepoints.size(), 3u);
}

#ifdef CLI_TP_RELR
TEST(ElfReader, PackedRelativeRelocations) {
#if defined(__aarch64__)
  GTEST_SKIP() << "GNU ld 2.40 accepts -z pack-relative-relocs on aarch64 but writes no DT_RELR "
                  "(RELA only): nothing packed to read";
#endif
  auto f = OpenOrDie(CLI_TP_RELR);
  ASSERT_TRUE(f);
  EXPECT_EQ(DescRelocations(*f), std::set<ElfFile::Relocation>{ElfFile::Relocation::kRelr});
  ModuleTracepoints m;
  std::string error;
  ASSERT_TRUE(ReadTracepoints(*f, &m, &error)) << error;
  EXPECT_EQ(Names(m), ProgramNames());
}
#endif

#ifdef CLI_TP_LLD
TEST(ElfReader, LldLeavesZeroesUnderRelaRelocations) {
  auto f = OpenOrDie(CLI_TP_LLD);
  ASSERT_TRUE(f);
  const ElfFile::Section* s = f->FindSection("hush_desc");
  ASSERT_NE(s, nullptr);
  std::string contents(s->header.sh_size, '\1');
  ASSERT_TRUE(f->Read(s->header.sh_offset, contents.size(), contents.data()));
  EXPECT_EQ(contents, std::string(contents.size(), '\0'));
  EXPECT_EQ(DescRelocations(*f), std::set<ElfFile::Relocation>{ElfFile::Relocation::kRelaRelative});
  ModuleTracepoints m;
  std::string error;
  ASSERT_TRUE(ReadTracepoints(*f, &m, &error)) << error;
  EXPECT_EQ(Names(m), ProgramNames());
}
#endif

// The same PIE with the values under the RELA relocations zeroed (as lld writes them): the
// addends are used, not the stored values.
TEST(ElfReader, RelaAddendsWinOverStoredValues) {
  std::string image = ReadFile(CLI_TP_PIE);
  auto f = OpenOrDie(CLI_TP_PIE);
  ASSERT_TRUE(f);
  const ElfFile::Section* s = f->FindSection("hush_desc");
  ASSERT_NE(s, nullptr);
  std::memset(image.data() + s->header.sh_offset, 0, s->header.sh_size);
  std::string error;
  bool ok;
  const ModuleTracepoints m = ReadImage(image, &error, &ok);
  ASSERT_TRUE(ok) << error;
  EXPECT_EQ(Names(m), ProgramNames());
}

// Without its section headers (sstrip) or with the section renamed, hush_desc is found from the
// module's .note.hushtrace, as the runtime does.
TEST(ElfReader, FindsTheArrayThroughTheNote) {
  const std::string original = ReadFile(CLI_TP_PIE);
  auto f = OpenOrDie(CLI_TP_PIE);
  ASSERT_TRUE(f);
  std::string error;
  bool ok;

  std::string no_sections = original;
  Elf64_Ehdr eh;
  std::memcpy(&eh, no_sections.data(), sizeof eh);
  eh.e_shoff = 0;
  eh.e_shnum = 0;
  eh.e_shstrndx = 0;
  std::memcpy(no_sections.data(), &eh, sizeof eh);
  ModuleTracepoints m = ReadImage(no_sections, &error, &ok);
  ASSERT_TRUE(ok) << error;
  EXPECT_TRUE(m.has_section);
  EXPECT_EQ(Names(m), ProgramNames());
  EXPECT_FALSE(m.build_id.empty());
  // The static-key sites come through their own note just as well (section hush_jump).
  const auto jump_sites = [](const ModuleTracepoints& t) {
    std::vector<std::size_t> v;
    for (const auto& tp : t.tracepoints) v.push_back(tp.jump_sites);
    return v;
  };
  const ModuleTracepoints with_sections = ReadImage(original, &error, &ok);
  ASSERT_TRUE(ok) << error;
  EXPECT_EQ(jump_sites(m), jump_sites(with_sections));
#if !defined(HUSH_NO_STATIC_KEYS) && defined(__x86_64__)
  // One patchable NOP per site; a span's site has two (its begin and its end).
  for (const auto& tp : with_sections.tracepoints) {
    const std::size_t per_site = std::string(registry::KindName(tp.meta.kind)) == "span" ? 2 : 1;
    EXPECT_EQ(tp.jump_sites, per_site * tp.sites) << tp.meta.FullName();
  }
#endif

  std::string renamed = original;
  const std::size_t at = renamed.find(std::string("hush_desc\0", 10));
  ASSERT_NE(at, std::string::npos);
  renamed[at] = 'X';
  m = ReadImage(renamed, &error, &ok);
  ASSERT_TRUE(ok) << error;
  EXPECT_EQ(Names(m), ProgramNames());
}

TEST(ElfReader, ErrorsNameTheFileAndOffset) {
  const std::string image = ReadFile(CLI_TP_PIE);
  std::string error;
  EXPECT_FALSE(ElfFile::FromMemory("short.bin", image.substr(0, 40), &error));
  EXPECT_EQ(error, "short.bin: truncated ELF header (40 bytes, 64 needed) (offset 0x0)");
  EXPECT_FALSE(ElfFile::FromMemory("half.bin", image.substr(0, image.size() / 2), &error));
  EXPECT_EQ(error.rfind("half.bin: ", 0), 0u) << error;
  EXPECT_NE(error.find("extends past the end of the file (size 0x"), std::string::npos) << error;
  EXPECT_NE(error.find(") (offset 0x"), std::string::npos) << error;
  std::string core = image;
  core[16] = ET_CORE;
  core[17] = 0;
  EXPECT_FALSE(ElfFile::FromMemory("core.bin", core, &error));
  EXPECT_EQ(error, "core.bin: core files are not supported (offset 0x10)");
}

// Random corruption of a real image: the reader may fail, warn or list nonsense, but must never
// read out of bounds (ASan), loop forever or crash.
TEST(ElfReader, SurvivesCorruptedImages) {
  const std::string original = ReadFile(CLI_TP_PIE);
  auto f = OpenOrDie(CLI_TP_PIE);
  ASSERT_TRUE(f);
  // The interesting places: headers and tables, hush_desc, the dynamic section and .rela.dyn.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> areas = {
      {0, 64 + 56 * f->segments().size()}};
  for (const char* name :
       {"hush_desc", "hush_jump", ".rela.dyn", ".dynamic", ".note.hushtrace", ".rodata", ".data"}) {
    if (const ElfFile::Section* s = f->FindSection(name))
      areas.emplace_back(s->header.sh_offset, s->header.sh_size);
  }
  areas.emplace_back(f->header().e_shoff, f->sections().size() * sizeof(Elf64_Shdr));
  std::mt19937_64 rng(20240611);
  int parsed = 0, listed = 0;
  for (int iteration = 0; iteration < 1500; ++iteration) {
    std::string image = original;
    const int flips = 1 + static_cast<int>(rng() % 8);
    for (int k = 0; k < flips; ++k) {
      const auto& [offset, size] = areas[rng() % areas.size()];
      if (size == 0) continue;
      const std::uint64_t at = offset + rng() % size;
      if (at >= image.size()) continue;
      switch (rng() % 4) {
        case 0:
          image[at] = static_cast<char>(rng());
          break;
        case 1:
          image[at] ^= static_cast<char>(1u << (rng() % 8));
          break;
        case 2:
          image[at] = static_cast<char>(0xff);
          break;
        default:
          image[at] = 0;
          break;
      }
    }
    if (rng() % 8 == 0) image.resize(rng() % image.size());
    std::string error;
    bool ok;
    const ModuleTracepoints m = ReadImage(image, &error, &ok);
    parsed += ok;
    listed += !m.tracepoints.empty();
    if (!ok) {
      EXPECT_EQ(error.rfind("image", 0), 0u) << error;
    }
  }
  EXPECT_GT(parsed, 0);
  EXPECT_GT(listed, 0);
}

}  // namespace
}  // namespace hush::elf
