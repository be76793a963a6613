// Tokenizer for the TSDL subset of docs/format.md, section 2.
#ifndef HUSHTRACE_SRC_READER_TSDL_LEXER_H_
#define HUSHTRACE_SRC_READER_TSDL_LEXER_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hush::reader::internal {

enum class TokenKind : std::uint8_t { kEnd, kIdent, kNumber, kString, kPunct };

struct Token {
  TokenKind kind = TokenKind::kEnd;
  std::string text;          // identifier, unescaped string, or punctuation ("{", ":=", "...")
  std::uint64_t number = 0;  // kNumber
  std::size_t offset = 0;    // byte offset in the metadata text
};

// "FILE: line L, column C (byte B): message"
std::string LocateError(std::string_view text, const std::string& file, std::size_t offset,
                        const std::string& message);

// Splits `text` into tokens, ending with one kEnd token. Comments are skipped.
bool Tokenize(std::string_view text, const std::string& file, std::vector<Token>* out,
              std::string* error);

}  // namespace hush::reader::internal

#endif  // HUSHTRACE_SRC_READER_TSDL_LEXER_H_
