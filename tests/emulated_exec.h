// Running the test programs of a cross build (make test-aarch64) under the emulator.
//
// ctest runs every test binary through CMAKE_CROSSCOMPILING_EMULATOR (qemu-aarch64 -L sysroot)
// and exports it to the test as HUSH_TEST_EMULATOR. A test that executes another program of the
// build (a child, a victim, the CLI) gets ENOEXEC from the host kernel unless binfmt_misc knows
// the architecture, which a container usually does not: EmulatedArgv() puts the emulator in
// front of every program of the test's own architecture in argv: the program itself, the word
// after "--", and PROGRAM of `hushtrace record [OPTIONS] PROGRAM`. Host programs (babeltrace2,
// the native hush_bt_dump that reads the cross build's traces) run as they are. Native builds:
// no change.
#ifndef HUSHTRACE_TESTS_EMULATED_EXEC_H_
#define HUSHTRACE_TESTS_EMULATED_EXEC_H_

#include <elf.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

namespace hushtest {

// Whether `path` is an ELF file for the machine this test was compiled for.
inline bool IsOwnArchitectureElf(const std::string& path) {
#if defined(__aarch64__)
  constexpr std::uint16_t kOwn = EM_AARCH64;
#else
  constexpr std::uint16_t kOwn = EM_X86_64;
#endif
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  unsigned char h[20] = {};
  const bool whole = ::read(fd, h, sizeof h) == static_cast<ssize_t>(sizeof h);
  ::close(fd);
  std::uint16_t machine;
  std::memcpy(&machine, h + 18, 2);  // e_machine, little-endian on both
  return whole && std::memcmp(h, ELFMAG, SELFMAG) == 0 && machine == kOwn;
}

// The emulator's words ("qemu-aarch64", "-L", sysroot), empty in a native build.
inline std::vector<std::string> TestEmulator() {
  std::vector<std::string> words;
  const char* emu = std::getenv("HUSH_TEST_EMULATOR");
  if (emu == nullptr) return words;
  std::istringstream in(emu);
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

// Whether this test runs under an emulator (a cross build's ctest).
inline bool Emulated() { return !TestEmulator().empty(); }

inline std::vector<std::string> EmulatedArgv(const std::vector<std::string>& argv) {
  const std::vector<std::string> emu = TestEmulator();
  if (emu.empty()) return argv;
  std::vector<std::string> out;
  // `hushtrace record [OPTIONS] PROGRAM`: PROGRAM is the first program of ours after "record".
  bool record = argv.size() > 1 && argv[1] == "record";
  bool program_next = true;  // argv[0], then the word after "--"
  for (std::size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    const bool program = program_next || (record && i > 1);
    if (program && IsOwnArchitectureElf(a)) {
      out.insert(out.end(), emu.begin(), emu.end());
      record = record && i == 0;  // after PROGRAM come its own arguments
    }
    program_next = a == "--";
    out.push_back(a);
  }
  return out;
}

}  // namespace hushtest

#endif  // HUSHTRACE_TESTS_EMULATED_EXEC_H_
