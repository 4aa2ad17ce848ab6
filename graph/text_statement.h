// The tokens of one line of .mg text and the checked reads the program text parser makes of
// them; every error carries the statement's "source:line". Used by graph/program_text.cpp only.
#pragma once

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "graph/error.h"
#include "graph/syntax.h"

namespace mugraph::graph::text {

enum class TokenKind { Identifier, Number, Punct, End };

struct Token {
  TokenKind kind = TokenKind::End;
  std::string text;
};

inline std::string describe(const Token& token) {
  return token.kind == TokenKind::End ? "the end of the line" : "'" + token.text + "'";
}

inline std::string_view stripComment(std::string_view line) {
  const size_t hash = line.find('#');
  return hash == std::string_view::npos ? line : line.substr(0, hash);
}

inline std::string_view trim(std::string_view text) {
  const size_t begin = text.find_first_not_of(" \t\r");
  if (begin == std::string_view::npos) return {};
  return text.substr(begin, text.find_last_not_of(" \t\r") - begin + 1);
}

// The tokens of one statement; every error carries the statement's "source:line".
class Statement {
 public:
  Statement(std::string_view text, std::string where) : where_(std::move(where)) {
    size_t i = 0;
    while (i < text.size()) {
      const char c = text[i];
      if (c == ' ' || c == '\t' || c == '\r') {
        ++i;
      } else if (isIdentifierStart(c)) {
        const size_t begin = i;
        while (i < text.size() && isIdentifierChar(text[i])) ++i;
        tokens_.push_back({TokenKind::Identifier, std::string(text.substr(begin, i - begin))});
      } else if ((c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.') {
        const size_t begin = i++;
        while (i < text.size() && (isIdentifierChar(text[i]) || text[i] == '.' ||
                                   ((text[i] == '-' || text[i] == '+') &&
                                    (text[i - 1] == 'e' || text[i - 1] == 'E')))) {
          ++i;
        }
        tokens_.push_back({TokenKind::Number, std::string(text.substr(begin, i - begin))});
      } else if (std::string_view("()[],=").find(c) != std::string_view::npos) {
        tokens_.push_back({TokenKind::Punct, std::string(1, c)});
        ++i;
      } else {
        fail("unexpected character '" + std::string(1, c) + "'");
      }
    }
  }

  [[noreturn]] void fail(const std::string& reason) const { throw UserError(where_, reason); }
  const std::string& where() const { return where_; }

  const Token& peek(size_t ahead = 0) const {
    static const Token kEnd;
    return pos_ + ahead < tokens_.size() ? tokens_[pos_ + ahead] : kEnd;
  }
  bool isPunct(const char* text, size_t ahead = 0) const {
    return peek(ahead).kind == TokenKind::Punct && peek(ahead).text == text;
  }
  Token next() {
    Token token = peek();
    if (pos_ < tokens_.size()) ++pos_;
    return token;
  }
  void expectPunct(const char* text, const std::string& context) {
    if (!isPunct(text))
      fail("expected '" + std::string(text) + "' " + context + ", got " + describe(peek()));
    ++pos_;
  }
  std::string expectIdentifier(const std::string& what) {
    if (peek().kind != TokenKind::Identifier)
      fail("expected " + what + ", got " + describe(peek()));
    return next().text;
  }
  void expectEnd() {
    if (peek().kind != TokenKind::End)
      fail("unexpected " + describe(peek()) + " after the statement");
  }
  int64_t integer(const std::string& what, int64_t min, int64_t max) {
    const Token token = next();
    int64_t value = 0;
    const char* end = token.text.data() + token.text.size();
    auto [ptr, ec] = std::from_chars(token.text.data(), end, value);
    if (token.kind != TokenKind::Number || ec != std::errc() || ptr != end || value < min ||
        value > max) {
      fail(what + " must be an integer in " + std::to_string(min) + ".." + std::to_string(max) +
           ", got " + describe(token));
    }
    return value;
  }
  double number(const std::string& what) {
    const Token token = next();
    double value = 0;
    const char* begin = token.text.data() + (token.text.rfind('+', 0) == 0 ? 1 : 0);
    const char* end = token.text.data() + token.text.size();
    auto [ptr, ec] = std::from_chars(begin, end, value);
    if (token.kind != TokenKind::Number || ec != std::errc() || ptr != end) {
      fail(what + " must be a number, got " + describe(token));
    }
    return value;
  }

 private:
  std::string where_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
};

}  // namespace mugraph::graph::text
