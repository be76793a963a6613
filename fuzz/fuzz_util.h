// Shared by the fuzz targets: a private scratch directory per fuzzing process, and files written
// into it from fuzz input. Targets never touch anything outside that directory.
#ifndef HUSHTRACE_FUZZ_FUZZ_UTIL_H_
#define HUSHTRACE_FUZZ_FUZZ_UTIL_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hush::fuzz {

// A fresh 0700 directory under $TMPDIR (or /tmp), created once per process, removed at exit.
const std::string& ScratchDir();

// Empties `dir` (files and one level of subdirectories) and recreates it.
void ResetDir(const std::string& dir);

void WriteFile(const std::string& path, std::string_view bytes);

// Splits `data` into parts at each occurrence of the separator "\n--8<--\n"; at most `max_parts`
// parts (the last part keeps the rest). Seed files are written in this framing by hand or by
// fuzz/make_corpus.sh, so they stay readable.
std::vector<std::string_view> SplitParts(const std::uint8_t* data, std::size_t size,
                                         std::size_t max_parts);

}  // namespace hush::fuzz

#endif  // HUSHTRACE_FUZZ_FUZZ_UTIL_H_
