// Names of traced functions (func:entry / func:exit addresses) for the exporters.
//
// HexAddressResolver prints the address ("0x401a2b"); Symbolizer (symbolizer.h) names it from the
// trace's module map and the modules' ELF symbols, for every view. Resolve() is called once per distinct
// address: TimelineBuilder caches the result.
#ifndef HUSHTRACE_SRC_EXPORT_SYMBOL_RESOLVER_H_
#define HUSHTRACE_SRC_EXPORT_SYMBOL_RESOLVER_H_

#include <cstdint>
#include <string>

namespace hush::exporter {

class SymbolResolver {
 public:
  virtual ~SymbolResolver() = default;
  virtual std::string Resolve(std::uint64_t addr) const = 0;
};

// "0x" and lowercase hex digits, no leading zeros ("0x0" for 0).
class HexAddressResolver final : public SymbolResolver {
 public:
  std::string Resolve(std::uint64_t addr) const override;
};

}  // namespace hush::exporter

#endif  // HUSHTRACE_SRC_EXPORT_SYMBOL_RESOLVER_H_
